"""Workspace confinement without races: every path is walked from the workspace root one
directory file descriptor at a time, each component opened with O_NOFOLLOW.

The kernel never follows a symbolic link for a tool. A link inside the workspace is read
here (`readlink` relative to the directory holding it) and its target walked the same way,
so reads may go through links that stay inside; writes and edits refuse any path with a
link in it, because then the path the model named, the path the user approved and the file
written would differ. What each component was when a path was checked is kept in a
`Target`; the write walks the path again, creates missing parents one level at a time, and
refuses if a directory or the file was replaced, removed or turned into a link since.
The file itself is written to a temporary name in the same directory and renamed over the
target, keeping an existing file's permission bits.

Not covered: a process that moves a directory the walk is holding to outside the workspace
can still receive the file; only the kernel (`openat2` with RESOLVE_BENEATH) closes that.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections import deque
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from agent.tools.registry import ToolError, describe_os_error

MAX_LINKS = 40  # as many links as Linux follows in one path lookup
ABOVE_WORKSPACE = "a link above the workspace"
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_ROOT_FLAGS = os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
# O_NONBLOCK: a FIFO swapped in for a file must not hang the open.
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC


@dataclass(frozen=True)
class Stamp:
    """What a file or directory was when it was checked: identity, type, size and time."""

    dev: int
    ino: int
    mode: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> Stamp:
        """The stamp of a stat result."""
        return cls(st.st_dev, st.st_ino, st.st_mode, st.st_size, st.st_mtime_ns)

    @property
    def is_dir(self) -> bool:
        """True for a directory."""
        return stat.S_ISDIR(self.mode)

    @property
    def is_file(self) -> bool:
        """True for a regular file."""
        return stat.S_ISREG(self.mode)

    def same_object(self, st: os.stat_result) -> bool:
        """True if `st` is the same inode on the same device."""
        return (self.dev, self.ino) == (st.st_dev, st.st_ino)

    def unchanged(self, st: os.stat_result) -> bool:
        """True if `st` is the same file with the same size and modification time."""
        return self.same_object(st) and (self.size, self.mtime_ns) == (
            st.st_size,
            st.st_mtime_ns,
        )


@dataclass(frozen=True)
class Target:
    """A path resolved inside the workspace: its real components and what they were."""

    workspace: Path
    parts: tuple[str, ...]  # real, link-free, relative to the workspace
    stamps: tuple[Stamp | None, ...]  # one per component; None: it did not exist
    root: Stamp  # the workspace directory itself
    links: tuple[str, ...]  # the links passed on the way, workspace-relative

    @property
    def rel(self) -> str:
        """The real path relative to the workspace, in POSIX form ("." for the workspace)."""
        return "/".join(self.parts) or "."

    @property
    def path(self) -> Path:
        """The real absolute path."""
        return self.workspace.joinpath(*self.parts)

    @property
    def final(self) -> Stamp | None:
        """What the target itself was (the workspace's stamp for the workspace)."""
        return self.stamps[-1] if self.parts else self.root

    def refuse_links(self, raw: str) -> None:
        """Raise ToolError if the path went through a symbolic link (writes never do)."""
        if self.links:
            raise ToolError(
                f"Refused: {raw} goes through a symbolic link ({self.links[0]}); files are "
                f"not written through links, so give the real path {self.rel}."
            )


def outside(raw: str, workspace: Path) -> ToolError:
    """The refusal for a path that leads outside the workspace."""
    return ToolError(f"Refused: {raw} is outside the workspace {workspace}.")


def changed(rel: str, what: str) -> ToolError:
    """The refusal for a path that changed between its check and its use."""
    return ToolError(
        f"Refused: {rel} changed since it was checked ({what}); nothing was written or read. "
        "Look at the path again and retry."
    )


def display(workspace: Path, path: Path) -> str:
    """`path` relative to the workspace, in POSIX form ("." for the workspace itself)."""
    try:
        return path.relative_to(workspace).as_posix()  # "." for the workspace itself
    except ValueError:
        return str(path)


# ---------------------------------------------------------------- resolving


def _components(workspace: Path, raw: str, text: str) -> tuple[list[str], bool]:
    """Workspace-relative components of `text` (".." kept: the walk resolves it), and
    whether finding them meant following a link the kernel resolved."""
    pure = PurePosixPath(text)
    if not pure.is_absolute():
        return list(pure.parts), False
    root = workspace.parts[1:]
    parts = pure.parts[1:]
    if parts[: len(root)] == root:
        return list(parts[len(root) :]), False
    # Another spelling of a path inside (through a link above the workspace, or `..`):
    # follow it once to find where it lands; the walk then starts from there.
    real = Path(os.path.realpath(text))
    if real != workspace and not real.is_relative_to(workspace):
        raise outside(raw, workspace)
    return list(real.relative_to(workspace).parts), real != Path(os.path.normpath(text))


def resolve(workspace: Path, raw: str | None, *, default: str | None = None) -> Target:
    """Resolve `raw` (relative to the workspace, or absolute) without the kernel following links.

    Links inside the workspace are followed here while they stay inside; raises ToolError
    for an empty, invalid or outside path.
    """
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        if default is None:
            raise ToolError("The path argument is empty; give a file path.")
        raw = default
    if "\0" in raw:
        raise ToolError(f"Invalid path {raw!r}: it contains a NUL byte.")
    text = os.path.expanduser(raw)
    parts, via_link = _components(workspace, raw, text)
    pending = deque(parts)
    links = [ABOVE_WORKSPACE] if via_link else []
    try:
        return _walk_resolving(workspace, raw, pending, links)
    except OSError as exc:
        raise ToolError(f"Could not open {raw}: {describe_os_error(exc)}.") from None


def _walk_resolving(workspace: Path, raw: str, pending: deque[str], links: list[str]) -> Target:
    real: list[str] = []
    fds = [os.open(workspace, _ROOT_FLAGS)]  # fds[i + 1] is the open directory real[i]
    stamps: list[Stamp | None] = []
    root = Stamp.of(os.fstat(fds[0]))
    try:
        while pending:
            name = pending.popleft()
            if name == "..":
                if not real:
                    raise outside(raw, workspace)
                real.pop()
                stamps.pop()
                if len(fds) > len(real) + 1:
                    os.close(fds.pop())
                continue
            if len(fds) < len(real) + 1:  # below a missing directory: nothing to look at
                real.append(name)
                stamps.append(None)
                continue
            try:
                st = os.lstat(name, dir_fd=fds[-1])
            except FileNotFoundError:
                real.append(name)
                stamps.append(None)
                continue
            if stat.S_ISLNK(st.st_mode):
                if len(links) >= MAX_LINKS:
                    raise ToolError(f"Refused: {raw} goes through too many symbolic links.")
                target = os.readlink(name, dir_fd=fds[-1])
                links.append("/".join([*real, name]))
                if os.path.isabs(target):
                    while len(fds) > 1:
                        os.close(fds.pop())
                    real.clear()
                    stamps.clear()
                    inside, via_link = _components(workspace, raw, target)
                    if via_link:
                        links.append(ABOVE_WORKSPACE)
                    pending.extendleft(reversed(inside))
                else:
                    pending.extendleft(reversed(PurePosixPath(target).parts))
                continue
            real.append(name)
            stamp = Stamp.of(st)
            stamps.append(stamp)
            if not pending:
                break
            if not stat.S_ISDIR(st.st_mode):
                raise ToolError(f"{'/'.join(real)} is not a directory, so {raw} cannot exist.")
            fd = _open_dir(name, fds[-1], "/".join(real))
            if not stamp.same_object(os.fstat(fd)):
                os.close(fd)
                raise changed("/".join(real), "it was replaced while being looked up")
            fds.append(fd)
    finally:
        for fd in fds:
            os.close(fd)
    return Target(workspace, tuple(real), tuple(stamps), root, tuple(links))


# ---------------------------------------------------------------- opening


def _open_dir(name: str, parent: int, rel: str) -> int:
    """Open the directory `name` under `parent` without following a link."""
    try:
        return os.open(name, DIR_FLAGS, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK, errno.ENOTDIR):
            raise changed(rel, _what_it_is(name, parent)) from None
        raise


def _what_it_is(name: str, parent: int) -> str:
    """Why `name` under `parent` cannot be walked through: a link, a file, or gone."""
    try:
        st = os.lstat(name, dir_fd=parent)
    except OSError:
        return "it is gone"
    if stat.S_ISLNK(st.st_mode):
        return "it is now a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "it is no longer a directory"
    return "it was replaced"


def _open_parents(target: Target, *, create: bool = False) -> int:
    """A descriptor of the target's directory, walked again from the root and checked."""
    return _open_prefix(target, len(target.parts) - 1, create=create)


def _open_prefix(target: Target, count: int, *, create: bool = False) -> int:  # pragma: no mutate
    # (The default serves open_dir only, whose parts all existed when resolved: never created.)
    fd = os.open(target.workspace, _ROOT_FLAGS)
    try:
        if not target.root.same_object(os.fstat(fd)):
            raise changed(".", "the workspace directory was replaced")
        for index in range(count):
            name = target.parts[index]
            rel = "/".join(target.parts[: index + 1])
            expected = target.stamps[index]
            if expected is None and create:
                try:
                    os.mkdir(name, dir_fd=fd)
                except FileExistsError:
                    pass  # made meanwhile: fine if it is a real directory, checked below
            elif expected is None:
                raise changed(rel, "it did not exist")
            try:
                child = _open_dir(name, fd, rel)
            except FileNotFoundError:
                raise changed(rel, "it is gone") from None
            if expected is not None and not expected.same_object(os.fstat(child)):
                os.close(child)
                raise changed(rel, "another directory took its place")
            os.close(fd)
            fd = child
        return fd
    except BaseException:
        os.close(fd)
        raise


def open_dir(target: Target) -> int:
    """A descriptor of the directory `target`, checked to be what it was when resolved."""
    if not target.final or not target.final.is_dir:
        raise ToolError(f"{target.rel} is not a directory.")
    return _open_prefix(target, len(target.parts))


def open_file(target: Target) -> int:
    """A read descriptor of the regular file `target`, checked to be what it was resolved."""
    parent = _open_parents(target)
    name = target.parts[-1]
    try:
        try:
            fd = os.open(name, READ_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            raise changed(target.rel, "it is gone") from None
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK):
                raise changed(target.rel, "it is now a symbolic link") from None
            raise
    finally:
        os.close(parent)
    st = os.fstat(fd)
    expected = target.final
    if expected is None or not expected.same_object(st) or not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise changed(target.rel, "another file took its place")
    # O_NONBLOCK (against a FIFO) changes nothing on a regular file: cleared only so the
    # descriptor a caller gets is an ordinary one.
    os.set_blocking(fd, True)  # pragma: no mutate
    return fd


def read_bytes(target: Target) -> bytes:
    """The whole content of the regular file `target`, read through a checked descriptor."""
    with os.fdopen(open_file(target), "rb") as fh:
        return fh.read()


def write_bytes(target: Target, data: bytes, *, executable: bool | None = None) -> None:
    """Write `data` to `target` atomically, refusing if anything on its path changed.

    Missing parents are created one level at a time; an existing file keeps its mode, with
    its execute bits set or cleared when `executable` says so (a restored checkpoint).
    """
    name = target.parts[-1]
    parent = _open_parents(target, create=True)
    try:
        expected = target.final
        try:
            current = os.lstat(name, dir_fd=parent)
        except FileNotFoundError:
            current = None
        if expected is None and current is not None:
            raise changed(target.rel, "a file appeared there")
        if expected is not None and current is None:
            raise changed(target.rel, "the file was removed")
        if current is not None and stat.S_ISLNK(current.st_mode):
            raise changed(target.rel, "it is now a symbolic link")
        if expected is not None and current is not None and not expected.unchanged(current):
            raise changed(target.rel, "the file was modified or replaced")
        _replace(parent, name, data, current, executable)
    finally:
        os.close(parent)


def remove_file(target: Target) -> None:
    """Remove the regular file `target`, refusing if anything on its path changed."""
    name = target.parts[-1]
    parent = _open_parents(target)
    try:
        current = os.lstat(name, dir_fd=parent)
        if target.final is None or not target.final.unchanged(current):
            raise changed(target.rel, "the file was modified or replaced")
        os.unlink(name, dir_fd=parent)
    except FileNotFoundError:
        return
    finally:
        os.close(parent)


def _with_execute(mode: int, executable: bool | None) -> int:
    """`mode` with execute bits where it can read (executable) or none (not executable)."""
    if executable is None:
        return mode
    if executable:
        return mode | ((mode & 0o444) >> 2)
    return mode & ~0o111


def _replace(
    parent: int,
    name: str,
    data: bytes,
    current: os.stat_result | None,
    executable: bool | None = None,
) -> None:
    """Write a temporary file next to `name` and rename it over `name` (never followed)."""
    # Cut in bytes: NAME_MAX (255) counts bytes, and any cut up to 241 leaves room for the rest
    # (so the cut and the random part's length are not mutated: others would do as well).
    head, tag = os.fsencode(name)[:200], secrets.token_hex(4)  # pragma: no mutate
    temp = b".%s.%s.tmp" % (head, tag.encode())
    # A new file gets the usual 0666 less umask; a replacement starts private and then
    # takes the old file's mode, so a 0600 file's new content is never readable by others.
    fd = os.open(temp, _TEMP_FLAGS, 0o666 if current is None else 0o600, dir_fd=parent)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if current is not None or executable is not None:
                base = stat.S_IMODE(os.fstat(fd).st_mode if current is None else current.st_mode)
                os.fchmod(fd, _with_execute(base, executable))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, name, src_dir_fd=parent, dst_dir_fd=parent)
    except BaseException:
        try:
            os.unlink(temp, dir_fd=parent)
        except OSError:
            pass
        raise
