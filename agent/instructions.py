"""The project's instruction files in the system prompt (SPEC P1).

At the start of a session, and again before each turn (a file may have changed, appeared or
gone), `Instructions.refresh` reads, in prompt order: the user's `$HERMES_TUI_HOME/AGENTS.md`,
then each directory's files from the repository root down to the workspace (every one of
`AGENTS.md`, `CLAUDE.md` and `.hermes.md` that is there, so a repository kept for several
tools loses none of them; a link to another or a copy of its text counts once); nearer files
come later and win. A subdirectory's file
joins the first time a tool touches that subtree (`touch`), once per session. The section
they make is rebuilt only when one of them changes, so the system prompt, and with it the
provider's prompt-cache prefix, stays byte-identical from turn to turn (T7); compaction never
touches the system prompt, so the files survive it word for word.

The files are the user's repository: trusted as instructions, but read carefully. A file in
the repository is reached without leaving it (a link to `~/.ssh/id_rsa` named AGENTS.md is
refused, not sent to the provider), must be a regular file (a FIFO never hangs the read), is
read up to its cap only, and a binary one is skipped; each problem is one notice naming it.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from agent.models import tokens_for_chars
from agent.text_cuts import cut_at_line_end

NAMES = ("AGENTS.md", "CLAUDE.md", ".hermes.md")
"""The instruction files a directory may hold, in prompt order; every one there is read."""
USER_FILE = "AGENTS.md"
MAX_FILE_CHARS = 40_000
"""One file's share of the prompt; the rest of a longer file is left out, with a notice."""
MAX_TOTAL_CHARS = 100_000
"""All files together; a file past this is left out whole, with a notice."""
BINARY_SNIFF = 8192
HEADER = (
    "# Instructions from the user's files\n\n"
    "The files below are the user's instructions for working here, furthest first: where "
    "they disagree, the later (nearer) file wins. A file for a subdirectory applies to "
    "work under that directory."
)
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)

FileStamp = tuple[int, int, int, int]
"""A read file's device, inode, size and modification time (ns): changed when it changed."""


@dataclass(frozen=True)
class InstructionFile:
    """One instruction file as it is in the prompt.

    `shown` is how the user and the model see its path (workspace-relative, `../AGENTS.md`
    above the workspace, `~/…` for the user's own); `scope` is user | project | subtree;
    `also` names the same folder's files that are links to it or hold the same text.
    """

    path: Path
    shown: str
    scope: str
    text: str
    stamp: FileStamp
    full_chars: int
    also: tuple[str, ...] = ()

    @property
    def listed(self) -> str:
        """How the status panel and /context list it: its path, then its copies (`= …`)."""
        return " = ".join((self.shown, *self.also))

    @property
    def names(self) -> tuple[str, ...]:
        """Every file it stands for: its own path, then its copies'."""
        return (self.shown, *self.also)

    @property
    def truncated(self) -> bool:
        """True when the file is longer than what the prompt holds of it."""
        return self.full_chars > len(self.text)

    @property
    def tokens(self) -> int:
        """Estimated tokens of this file's part of the prompt."""
        return tokens_for_chars(len(self.section))

    @property
    def section(self) -> str:
        """This file's part of the prompt: a heading with its path, then its text."""
        label = {"user": " (the user's own, for every project)", "subtree": ""}.get(self.scope, "")
        copies = f" (also {', '.join(self.also)})" if self.also else ""
        return f"## {self.shown}{copies}{label}\n\n{self.text.strip()}"


@dataclass(frozen=True)
class Refresh:
    """What a refresh found since the last one: files whose text changed, files that
    appeared and files that went, each by the path it is shown as; and notices to show."""

    changed: tuple[str, ...] = ()
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    notices: tuple[str, ...] = ()

    @property
    def any(self) -> bool:
        """Whether any file changed, appeared or went."""
        return bool(self.changed or self.added or self.removed)


class Unreadable(Exception):
    """An instruction file that is there but cannot be used; the message says why."""


def _texts(files: tuple[InstructionFile, ...] | list[InstructionFile]) -> dict[str, str]:
    """Each file's text by its shown path, a copy's under its own path too."""
    return {name: f.text for f in files for name in f.names}


def repository_root(workspace: Path) -> Path | None:
    """The nearest directory at or above `workspace` holding `.git` (a dir or a worktree file)."""
    for directory in (workspace, *workspace.parents):
        if (directory / ".git").exists():
            return directory
    return None


def _shown(path: Path, workspace: Path) -> str:
    """A path as the user reads it: relative to the workspace, `../` above it, `~/` at home."""
    if path.is_relative_to(workspace):
        return path.relative_to(workspace).as_posix()
    if workspace.is_relative_to(path.parent):
        return Path(os.path.relpath(path, workspace)).as_posix()
    home = Path.home()
    if path.is_relative_to(home):
        return "~/" + path.relative_to(home).as_posix()
    return str(path)


def _inside(path: Path, root: Path) -> bool:
    """Whether `path`, every link followed, is `root` or below it."""
    real = Path(os.path.realpath(path))
    return real == root or real.is_relative_to(root)


def read_instruction(path: Path, confine: Path | None, cap: int) -> tuple[str, FileStamp, int]:
    """(text up to `cap` characters, stamp, full length) of one instruction file.

    `confine`: the file, its links followed, must stay under this directory. Raises
    FileNotFoundError when there is none, Unreadable when it cannot be used.
    """
    if confine is not None and not _inside(path, Path(os.path.realpath(confine))):
        if not os.path.lexists(path):
            raise FileNotFoundError(path)
        raise Unreadable("it is a link to a file outside the repository")
    try:
        fd = os.open(path, _READ_FLAGS)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno in (errno.ENOTDIR, errno.ELOOP):
            raise FileNotFoundError(path) from None
        raise Unreadable(exc.strerror or "it cannot be read") from None
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise Unreadable("it is not a regular file")
        os.set_blocking(fd, True)
        # Four bytes a character at most: enough to hold `cap` characters, never the whole
        # of a huge file.
        data = handle.read(cap * 4 + 1)
    if b"\0" in data[:BINARY_SNIFF]:
        raise Unreadable("it is a binary file")
    text = data.decode("utf-8", errors="replace")
    full = max(len(text), st.st_size) if len(data) > cap * 4 else len(text)
    stamp = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    return cut_at_line_end(text, cap), stamp, full


class Instructions:
    """The instruction files in effect for one workspace and session (thread-safe)."""

    def __init__(self, workspace: Path, home: Path | None) -> None:
        self.workspace = Path(workspace).resolve()
        self.home = home
        self.root = repository_root(self.workspace)
        self._lock = threading.Lock()
        self._files: tuple[InstructionFile, ...] = ()
        self._joined: list[str] = []  # workspace-relative directories, in join order
        self._told: set[tuple[str, object]] = set()
        self._section = ""
        self._loaded = False
        self._notices: list[str] = []

    @property
    def files(self) -> tuple[InstructionFile, ...]:
        """The files in effect, in prompt order."""
        return self._files

    @property
    def joined(self) -> tuple[str, ...]:
        """The subdirectories whose file joined this session (workspace-relative)."""
        with self._lock:
            return tuple(self._joined)

    def prompt_section(self) -> str:
        """The system prompt's instructions part ("" with no file); the same string until
        a file changes."""
        return self._section

    # -- reading -----------------------------------------------------------------------------
    def _locations(self) -> list[tuple[str, list[Path], Path | None]]:
        """(scope, candidate paths, confining directory) per place a file may be, in order."""
        places: list[tuple[str, list[Path], Path | None]] = []
        if self.home is not None:
            places.append(("user", [Path(self.home) / USER_FILE], None))
        top = self.root or self.workspace
        directories = [self.workspace, *self.workspace.parents]
        chain = directories[: directories.index(top) + 1] if top in directories else [top]
        for directory in reversed(chain):
            places.append(("project", [directory / name for name in NAMES], top))
        for rel in self._joined:
            directory = self.workspace / rel
            places.append(("subtree", [directory / name for name in NAMES], self.workspace))
        return places

    def _read_all(self) -> list[InstructionFile]:
        files: list[InstructionFile] = []
        total = 0
        for scope, candidates, confine in self._locations():
            for found in self._distinct(scope, candidates, confine):
                if self._fits(found, total):
                    total += len(found.text)
                    files.append(found)
        self._notices[:] = [notice for notice in self._notices if notice]
        return files

    def _fits(self, found: InstructionFile, total: int) -> bool:
        """Whether `found` fits beside `total` characters of earlier files; a file cut to
        its cap, or left out, is said once."""
        shown, stamp = found.shown, found.stamp
        if found.truncated:
            self._notices.append(
                self._once(
                    shown,
                    stamp,
                    f"{shown} is {found.full_chars:,} characters: only its first "
                    f"{len(found.text):,} are in the agent's instructions.",
                )
            )
        if total + len(found.text) > MAX_TOTAL_CHARS:
            self._notices.append(
                self._once(
                    shown,
                    stamp,
                    f"{shown} is left out of the agent's instructions: the instruction "
                    f"files together would pass {MAX_TOTAL_CHARS:,} characters.",
                )
            )
            return False
        return True

    def _distinct(
        self, scope: str, candidates: list[Path], confine: Path | None
    ) -> list[InstructionFile]:
        """One folder's files that are there, each once: a link to an earlier one, or a
        copy of its text, is named in the earlier one's `also` instead of read again."""
        found: list[InstructionFile] = []
        for path in candidates:
            shown = _shown(path, self.workspace)
            try:
                text, stamp, full = read_instruction(path, confine, MAX_FILE_CHARS)
            except FileNotFoundError:
                continue
            except Unreadable as exc:
                self._notices.append(self._once(shown, str(exc), f"Skipped {shown}: {exc}."))
                continue
            twin = next((f for f in found if f.stamp[:2] == stamp[:2] or f.text == text), None)
            if twin is None:
                found.append(InstructionFile(path, shown, scope, text, stamp, full))
            else:
                found[found.index(twin)] = replace(twin, also=(*twin.also, shown))
        return found

    def _once(self, shown: str, key: object, notice: str) -> str:
        """`notice`, the first time for this file in this state; "" after."""
        if (shown, key) in self._told:
            return ""
        self._told.add((shown, key))
        return notice

    def refresh(self) -> Refresh:
        """Read the files again (call between turns): which files changed, appeared or went
        since the last read (none on the first)."""
        with self._lock:
            before = _texts(self._files)
            files = self._read_all()
            after = _texts(files)
            first, self._loaded = not self._loaded, True
            self._files = tuple(files)
            self._section = self._build()
            if first:
                return Refresh(notices=self._take_notices())
            # By each file's own path and text: a file that appears beside another, or a
            # copy that stops being one, changes nothing the other says (it is not named).
            return Refresh(
                changed=tuple(n for n in after if n in before and before[n] != after[n]),
                added=tuple(n for n in after if n not in before),
                removed=tuple(n for n in before if n not in after),
                notices=self._take_notices(),
            )

    def take_notices(self) -> tuple[str, ...]:
        """Notices found since the last refresh (a joined file that cannot be used)."""
        with self._lock:
            return self._take_notices()

    def _take_notices(self) -> tuple[str, ...]:
        notices, self._notices = tuple(self._notices), []
        return notices

    def _build(self) -> str:
        if not self._files:
            return ""
        return "\n\n".join([HEADER, *(f.section for f in self._files)])

    # -- subtrees ----------------------------------------------------------------------------
    def touch(self, raw: str) -> tuple[InstructionFile, ...]:
        """A tool touched `raw`: the subdirectory files that join now (each once a session)."""
        rel = self._relative(raw)
        if rel is None:
            return ()
        with self._lock:
            fresh: list[str] = []
            parts = PurePosixPath(rel).parts
            for depth in range(1, len(parts) + 1):
                directory = "/".join(parts[:depth])
                if directory in self._joined:
                    continue
                if self._has_file(self.workspace / directory):
                    fresh.append(directory)
            if not fresh:
                return ()
            self._joined.extend(fresh)
            files = self._read_all()
            self._files = tuple(files)
            self._section = self._build()
            dirs = {self.workspace / d for d in fresh}
            return tuple(f for f in files if f.scope == "subtree" and f.path.parent in dirs)

    def rejoin(self, directories: list[str]) -> None:
        """A resumed session's joined subdirectories join again (no notice: they were shown)."""
        with self._lock:
            for directory in directories:
                rel = self._relative(directory)
                if rel is not None and rel not in self._joined:
                    self._joined.append(rel)
            files = self._read_all()
            self._files = tuple(files)
            self._section = self._build()

    def forget_joined(self) -> None:
        """A new session: subdirectory files join again when first touched."""
        with self._lock:
            if not self._joined:
                return
            self._joined.clear()
            self._files = tuple(f for f in self._files if f.scope != "subtree")
            self._section = self._build()

    def _relative(self, raw: str) -> str | None:
        """`raw` as a normalised workspace-relative path strictly below the workspace."""
        if not isinstance(raw, str) or not raw.strip() or "\0" in raw:
            return None
        path = Path(os.path.expanduser(raw))
        if path.is_absolute():
            if not path.is_relative_to(self.workspace):
                return None
            path = path.relative_to(self.workspace)
        rel = os.path.normpath(path.as_posix())
        if rel in (".", "") or rel.startswith(".."):
            return None
        return PurePosixPath(rel).as_posix()

    def _has_file(self, directory: Path) -> bool:
        """Whether `directory` holds any instruction file: a regular one, inside the workspace."""
        for name in NAMES:
            path = directory / name
            if os.path.lexists(path) and _inside(path, self.workspace):
                try:
                    if stat.S_ISREG(os.stat(path).st_mode):
                        return True
                except OSError:
                    continue
        return False
