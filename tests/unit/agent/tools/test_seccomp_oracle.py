"""The socket filter run by an oracle: a classic-BPF interpreter over synthetic seccomp_data.

The sandbox tests prove the filter by behaviour on the host's own ABI only; these run the
program the way the kernel would, for every ABI it claims (x86_64, x32, i386 with its
`socketcall`, aarch64, arm32) and for an architecture it does not know, so a wrong number
or jump on a machine we do not have fails here (X3, H6).
"""

from __future__ import annotations

import errno
import struct

import pytest

from agent.tools.seccomp import unix_socket_filter

ALLOW = 0x7FFF0000
EACCES = 0x00050000 | errno.EACCES
ENOSYS = 0x00050000 | errno.ENOSYS

AF_UNIX, AF_INET, AF_INET6, AF_NETLINK = 1, 2, 10, 16
X32_BIT = 0x40000000

ARCH_X86_64 = 0xC000003E
ARCH_I386 = 0x40000003
ARCH_AARCH64 = 0xC00000B7
ARCH_ARM = 0x40000028
ARCH_RISCV64 = 0xC00000F3


def seccomp_data(nr: int, arch: int, args: tuple[int, ...] = ()) -> bytes:
    """`struct seccomp_data` as the kernel lays it out (little-endian): nr, arch, ip, args[6]."""
    padded = (*args, *([0] * (6 - len(args))))
    return struct.pack("<iIQ6Q", nr, arch, 0x7FFF_0000_1234, *padded)


def run_bpf(program: bytes, data: bytes) -> int:
    """Run a classic-BPF program over `data` as the kernel's seccomp checker allows it.

    Only the instructions seccomp accepts are known here (anything else fails the test):
    absolute 32-bit loads, ALU AND with a constant, JEQ/JGT/JGE/JSET with a constant, JA and
    RET with a constant. Jumps only go forward, so every program ends."""
    assert len(program) % 8 == 0 and program, "a BPF program is a whole number of records"
    records = [struct.unpack_from("<HBBI", program, at) for at in range(0, len(program), 8)]
    assert len(records) <= 4096, "seccomp takes at most BPF_MAXINSNS instructions"
    acc, pc = 0, 0
    while True:
        assert 0 <= pc < len(records), f"the program runs off its end at {pc}"
        code, jt, jf, k = records[pc]
        if code == 0x20:  # BPF_LD | BPF_W | BPF_ABS
            assert k % 4 == 0 and k + 4 <= len(data), f"a load outside seccomp_data: {k}"
            (acc,) = struct.unpack_from("<I", data, k)
            pc += 1
        elif code == 0x54:  # BPF_ALU | BPF_AND | BPF_K
            acc &= k
            pc += 1
        elif code == 0x05:  # BPF_JMP | BPF_JA
            pc += 1 + k
        elif code in (0x15, 0x25, 0x35, 0x45):  # JEQ, JGT, JGE, JSET with a constant
            taken = {
                0x15: acc == k,
                0x25: acc > k,
                0x35: acc >= k,
                0x45: bool(acc & k),
            }[code]
            pc += 1 + (jt if taken else jf)
        elif code == 0x06:  # BPF_RET | BPF_K
            return k
        else:
            raise AssertionError(f"an instruction seccomp does not take: {code:#x}")


X86 = unix_socket_filter("x86_64")
ARM = unix_socket_filter("aarch64")

# (program, arch, nr, args, expected): each ABI the filter claims, and its edges.
CASES = [
    # x86_64: socket is 41, io_uring 425-427.
    (X86, ARCH_X86_64, 41, (AF_UNIX, 1, 0), EACCES),
    (X86, ARCH_X86_64, 41, (AF_INET, 1, 0), ALLOW),
    (X86, ARCH_X86_64, 41, (AF_INET6, 2, 0), ALLOW),
    (X86, ARCH_X86_64, 41, (AF_NETLINK, 3, 0), ALLOW),
    (X86, ARCH_X86_64, 53, (AF_UNIX, 1, 0), ALLOW),  # socketpair reaches nothing
    (X86, ARCH_X86_64, 42, (3, 0, 0), ALLOW),  # connect on a socket it was allowed
    (X86, ARCH_X86_64, 425, (), ENOSYS),
    (X86, ARCH_X86_64, 426, (), ENOSYS),
    (X86, ARCH_X86_64, 427, (), ENOSYS),
    (X86, ARCH_X86_64, 0, (), ALLOW),  # read
    (X86, ARCH_X86_64, 102, (1, 0), ALLOW),  # getuid on x86_64, socketcall only on i386
    (X86, ARCH_X86_64, 359, (AF_UNIX,), ALLOW),  # i386's socket number means nothing here
    # The upper half of an argument is not the family (the kernel truncates the int).
    (X86, ARCH_X86_64, 41, (AF_UNIX | (1 << 40), 1, 0), EACCES),
    # x32: the x86_64 arch with bit 30 set in the number.
    (X86, ARCH_X86_64, 41 | X32_BIT, (AF_UNIX, 1, 0), EACCES),
    (X86, ARCH_X86_64, 41 | X32_BIT, (AF_INET, 1, 0), ALLOW),
    (X86, ARCH_X86_64, 425 | X32_BIT, (), ENOSYS),
    # i386: socket is 359, socketcall (102) hides socket() behind a pointer: denied whole.
    (X86, ARCH_I386, 359, (AF_UNIX, 1, 0), EACCES),
    (X86, ARCH_I386, 359, (AF_INET, 1, 0), ALLOW),
    (X86, ARCH_I386, 102, (1, 0xFFFF0000), EACCES),
    (X86, ARCH_I386, 102, (3, 0xFFFF0000), EACCES),
    (X86, ARCH_I386, 425, (), ENOSYS),
    (X86, ARCH_I386, 41, (AF_UNIX,), ALLOW),  # x86_64's number is i386's `mkdir`-range call
    # aarch64: socket is 198.
    (ARM, ARCH_AARCH64, 198, (AF_UNIX, 1, 0), EACCES),
    (ARM, ARCH_AARCH64, 198, (AF_INET, 1, 0), ALLOW),
    (ARM, ARCH_AARCH64, 199, (AF_UNIX, 1, 0), ALLOW),  # socketpair
    (ARM, ARCH_AARCH64, 425, (), ENOSYS),
    (ARM, ARCH_AARCH64, 63, (), ALLOW),  # read
    # arm32 (EABI): socket is 281, no socketcall.
    (ARM, ARCH_ARM, 281, (AF_UNIX, 1, 0), EACCES),
    (ARM, ARCH_ARM, 281, (AF_INET, 1, 0), ALLOW),
    (ARM, ARCH_ARM, 427, (), ENOSYS),
    (ARM, ARCH_ARM, 198, (AF_UNIX,), ALLOW),
    # An arch the program does not know: the kernel of this machine cannot run it, so the
    # program lets it through rather than guess numbers (and the host's own ABI is checked).
    (X86, ARCH_RISCV64, 198, (AF_UNIX,), ALLOW),
    (ARM, ARCH_X86_64, 41, (AF_UNIX,), ALLOW),
]


def _case_id(case: tuple) -> str:
    program, arch, nr, args, expected = case
    machine = "x86_64" if program == X86 else "aarch64"
    verdict = {ALLOW: "allow", EACCES: "eacces", ENOSYS: "enosys"}[expected]
    return f"{machine}-arch{arch:#x}-nr{nr:#x}-{args[:1]}-{verdict}"


@pytest.mark.parametrize(
    ("program", "arch", "nr", "args", "expected"), CASES, ids=[_case_id(c) for c in CASES]
)
def test_the_filter_decides_each_abi_as_the_kernel_would(program, arch, nr, args, expected):
    """X3: each ABI's socket(AF_UNIX) fails with EACCES, io_uring with ENOSYS, the rest runs."""
    assert run_bpf(program, seccomp_data(nr, arch, args)) == expected


def test_every_socket_family_but_unix_is_allowed_on_every_abi():
    """X3: only AF_UNIX is closed; the network namespace, not this filter, closes the rest."""
    sockets = [(X86, ARCH_X86_64, 41), (X86, ARCH_I386, 359), (ARM, ARCH_AARCH64, 198)]
    sockets.append((ARM, ARCH_ARM, 281))
    for program, arch, nr in sockets:
        for family in range(46):
            verdict = run_bpf(program, seccomp_data(nr, arch, (family, 1, 0)))
            assert verdict == (EACCES if family == AF_UNIX else ALLOW), (arch, family)


def test_no_system_call_number_but_the_known_ones_is_refused():
    """X3: a sweep of numbers on every ABI finds only socket(AF_UNIX), socketcall, io_uring."""
    refused = {
        (ARCH_X86_64, 41),
        (ARCH_I386, 359),
        (ARCH_I386, 102),
        (ARCH_AARCH64, 198),
        (ARCH_ARM, 281),
    }
    for program, arch in [(X86, ARCH_X86_64), (X86, ARCH_I386), (ARM, ARCH_AARCH64)]:
        for nr in range(0, 600):
            verdict = run_bpf(program, seccomp_data(nr, arch, (AF_UNIX, 1, 0)))
            if nr in (425, 426, 427):
                assert verdict == ENOSYS, (arch, nr)
            else:
                assert verdict == (EACCES if (arch, nr) in refused else ALLOW), (arch, nr)
    for nr in range(0, 600):
        verdict = run_bpf(ARM, seccomp_data(nr, ARCH_ARM, (AF_UNIX, 1, 0)))
        if nr in (425, 426, 427):
            assert verdict == ENOSYS, nr
        else:
            assert verdict == (EACCES if (ARCH_ARM, nr) in refused else ALLOW), nr


def test_the_oracle_itself_refuses_what_the_kernel_would():
    """The interpreter is strict: a load past seccomp_data or a run off the end fails."""
    past_end = struct.pack("<HBBI", 0x20, 0, 0, 64) + struct.pack("<HBBI", 0x06, 0, 0, ALLOW)
    with pytest.raises(AssertionError, match="outside"):
        run_bpf(past_end, seccomp_data(0, ARCH_X86_64))
    no_return = struct.pack("<HBBI", 0x20, 0, 0, 0)
    with pytest.raises(AssertionError, match="off its end"):
        run_bpf(no_return, seccomp_data(0, ARCH_X86_64))
    assert unix_socket_filter("riscv64") is None
    assert unix_socket_filter("amd64") == X86 and unix_socket_filter("arm64") == ARM
