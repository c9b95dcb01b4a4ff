"""Piped stdin for `hermes-tui run`: the task when none is given, else context for it.

`echo task | hermes-tui run` runs the piped text as the task; `cat log | hermes-tui run
"summarise this"` attaches the log after the task, capped as one `@` file is. A stdin that
is a terminal is never read. With a task given, a stdin that stays silent (a script's open
pipe that nobody writes to) is waited for only `FIRST_BYTE_WAIT` seconds, and that is said.
"""

from __future__ import annotations

import os
import select
import stat
from dataclasses import dataclass
from typing import BinaryIO

from agent.attachments import BINARY_SNIFF, MAX_FILE_CHARS
from agent.text_cuts import cut_at_line_end

CAP_CHARS = MAX_FILE_CHARS
"""Piped context the model reads at most: one `@` file's share."""
FIRST_BYTE_WAIT = 3.0
"""With a task given: how long a silent stdin is waited for before the run goes on."""
_CHUNK = 65536


@dataclass(frozen=True)
class Piped:
    """What came on stdin: its text (cut to the cap), and whether it was cut or silent."""

    text: str
    cut: bool = False
    """More came than the cap; the rest was left unread (an endless `yes |` ends too)."""
    silent: bool = False
    """Nothing came within the wait (the stdin is left unread)."""
    binary: bool = False
    """The bytes are not text (a NUL among the first ones): nothing is attached."""


def is_piped(stream: BinaryIO) -> bool:
    """True when stdin is a pipe, a file or a socket, not a terminal (nor closed)."""
    try:
        return not stream.isatty() and stream.fileno() >= 0
    except (AttributeError, ValueError, OSError):
        return False


def read_piped(stream: BinaryIO, *, wait_first: float | None) -> Piped:
    """Read stdin to its end, keeping at most `CAP_CHARS` (plus a little to count the rest).

    `wait_first`: seconds to wait for the first byte of a pipe (None: as long as it takes).
    """
    fd = stream.fileno()
    if wait_first is not None and not _is_regular(fd):
        ready, _, _ = select.select([fd], [], [], wait_first)
        if not ready:
            return Piped("", silent=True)
    # Four bytes a character at most: the cap's bytes plus one tell a cut from a fit.
    keep = CAP_CHARS * 4 + 1
    data = bytearray()
    while len(data) < keep and (chunk := os.read(fd, min(_CHUNK, keep - len(data)))):
        data += chunk
    if b"\0" in data[:BINARY_SNIFF]:
        return Piped("", binary=True)
    text = data.decode("utf-8", errors="replace")
    shown = cut_at_line_end(text, CAP_CHARS)
    return Piped(shown, cut=len(data) >= keep or len(shown) < len(text))


def _is_regular(fd: int) -> bool:
    """A file redirected in (`< log`) is read at once: it cannot stay silent."""
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        return False


def context_block(piped: Piped) -> str:
    """The piped text as the model reads it after the task."""
    note = f"\n[... cut here: stdin held more than {CAP_CHARS:,} characters]" if piped.cut else ""
    lines = piped.text.count("\n") + (0 if piped.text.endswith("\n") else 1)
    return f'<piped_input lines="{lines}">\n{piped.text}{note}\n</piped_input>'


def attached_line(piped: Piped, *, as_task: bool = False) -> str | None:
    """The one stderr line that says what of stdin the model reads (None: nothing to say:
    it came empty, or it is the task itself)."""
    if piped.silent:
        return (
            f"stdin sent nothing in {FIRST_BYTE_WAIT:.0f} s: running without it "
            "(give `< /dev/null` to skip the wait)."
        )
    if piped.binary:
        return "stdin is not text (it holds NUL bytes): nothing attached."
    if not piped.text.strip():
        return None
    shown = len(piped.text)
    if piped.cut:
        what = "the task" if as_task else "attached stdin"
        return f"{what}: its first {shown:,} characters (the cap; the rest is not read)."
    return None if as_task else f"attached stdin: {shown:,} characters."
