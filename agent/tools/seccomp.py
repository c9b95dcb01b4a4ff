"""A seccomp filter for the shell sandbox: no Unix socket can be opened, no io_uring set up.

A read-only mount does not stop `connect()` on a Unix socket, and the host's daemons listen
on them in many places (docker, ssh `ControlPath` and agents in the home folder, gpg, the
session bus, editors' servers): a sandboxed command could ask one of them to act outside the
sandbox. So `socket(AF_UNIX, ...)` fails with EACCES (`socketpair` still works: a pair
reaches nothing but itself), and `io_uring_setup` with ENOSYS (a ring could open sockets
without the `socket` call this filter sees; programs then fall back to plain calls).

The program is classic BPF over `struct seccomp_data`, for the two machines we know the
system call numbers of (x86_64 with its i386 and x32 ABIs, aarch64 with its arm32 one);
bubblewrap installs it (`--seccomp FD`) right before running the command.
"""

from __future__ import annotations

import errno
import platform
import struct
from dataclasses import dataclass
from typing import Literal

_LD_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_AND = 0x54  # BPF_ALU | BPF_AND | BPF_K
_RET = 0x06  # BPF_RET | BPF_K
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
_NR, _ARCH, _ARG0 = 0, 4, 16  # offsets in struct seccomp_data (arguments little-endian)
_X32_BIT = 0x40000000
_AF_UNIX = 1
_IO_URING = (425, 426, 427)  # io_uring_setup, _enter, _register: the same on every ABI


@dataclass(frozen=True)
class _Abi:
    """One system call ABI: its audit arch, its socket() number, and calls denied outright."""

    arch: int
    socket: int
    denied: tuple[int, ...]  # socketcall() multiplexes socket() behind a pointer: denied
    x32: bool = False


_ABIS: dict[str, tuple[_Abi, ...]] = {
    "x86_64": (_Abi(0xC000003E, 41, (), x32=True), _Abi(0x40000003, 359, (102,))),
    "aarch64": (_Abi(0xC00000B7, 198, ()), _Abi(0x40000028, 281, ())),
}
_ABIS["amd64"] = _ABIS["x86_64"]
_ABIS["arm64"] = _ABIS["aarch64"]


# The assembler's instructions (see `_assemble`): a label names a position, a jump names
# labels (None falls through), every other instruction takes one number.
_Op = (
    tuple[Literal["ld", "and", "ret"], int]
    | tuple[Literal["label"], str]
    | tuple[Literal["jeq"], int, str | None, str | None]
)


def _abi_block(abi: _Abi, skip: str) -> list[_Op]:
    """The instructions for one ABI, entered (and left for `skip`) with its arch loaded."""
    block: list[_Op] = [("jeq", abi.arch, None, skip), ("ld", _NR)]
    if abi.x32:
        block.append(("and", 0xFFFFFFFF ^ _X32_BIT))
    block += [("jeq", number, "ring", None) for number in _IO_URING]
    block += [("jeq", number, "deny", None) for number in abi.denied]
    block += [
        ("jeq", abi.socket, None, "allow"),
        ("ld", _ARG0),
        ("jeq", _AF_UNIX, "deny", "allow"),
        ("label", skip),
    ]
    return block


def _assemble(program: list[_Op]) -> bytes:
    """BPF records for `program`: ("ld", offset), ("and", mask), ("ret", value),
    ("jeq", value, label when equal, label otherwise; None falls through), ("label", name)."""
    positions: dict[str, int] = {}
    count = 0
    for item in program:
        if item[0] == "label":
            positions[item[1]] = count
        else:
            count += 1
    records: list[tuple[int, int, int, int]] = []
    for item in program:
        here = len(records)
        if item[0] == "label":
            continue
        if item[0] == "jeq":
            _, value, equal, other = item
            jumps = [0 if to is None else positions[to] - here - 1 for to in (equal, other)]
            assert all(0 <= jump <= 255 for jump in jumps), "a jump out of reach"
            records.append((_JEQ, jumps[0], jumps[1], value))
        else:
            code = {"ld": _LD_ABS, "and": _AND, "ret": _RET}[item[0]]
            records.append((code, 0, 0, item[1]))
    return b"".join(struct.pack("<HBBI", *record) for record in records)


def unix_socket_filter(machine: str | None = None) -> bytes | None:
    """The filter's program for `machine` (this one by default) as bubblewrap reads it, or
    None where its system call numbers are not known here."""
    abis = _ABIS.get((machine or platform.machine()).lower())
    if abis is None:
        return None
    program: list[_Op] = [("ld", _ARCH)]
    for number, abi in enumerate(abis):
        program += _abi_block(abi, f"not-abi-{number}")
    program += [
        # An ABI this machine's kernel does not run: it refuses the call itself.
        ("ret", _ALLOW),
        ("label", "allow"),
        ("ret", _ALLOW),
        ("label", "deny"),
        ("ret", _ERRNO | errno.EACCES),
        ("label", "ring"),
        ("ret", _ERRNO | errno.ENOSYS),
    ]
    return _assemble(program)
