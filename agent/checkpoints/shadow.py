"""The shadow repository: the workspace's files as git objects kept outside the workspace.

Each snapshot is a tree in `$HERMES_TUI_HOME/checkpoints/<workspace-hash>`, a bare
repository of our own, written with the `git` binary through GIT_DIR / GIT_WORK_TREE and an
index file of its own. The user's `.git`, index, stash and hooks are never read or written
(git never takes a `.git` into a tree), and nothing the workspace holds can make git run
a program: no configuration but ours is read (no system, global or workspace config), hooks
and fsmonitor are off, and `info/attributes` (which wins over any `.gitattributes`) turns
off every filter, end-of-line conversion and encoding, so a snapshot is the bytes on disk.
`.gitignore` files are respected; files over the size cap are left out, and listed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

try:
    import fcntl
except ImportError:  # not on Windows, where only this process's own lock applies
    fcntl = None  # type: ignore[assignment]

DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024
"""Files larger than this are not checkpointed (and the user is told, once)."""
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
"""The id of git's empty tree: a workspace with no files in it."""
GIT_TIMEOUT = 120.0
FEW_CHANGES = 512
"""Up to this many changed paths are named to `git add`; more, and it walks the workspace."""

_NEUTRAL_ATTRIBUTES = "* -text -eol -ident -filter -working-tree-encoding\n"
"""`info/attributes`: no conversion, filter or encoding for any path, whatever the tree says."""

_CONFIG = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    # Directory times in our own index: an unchanged folder is not read again.
    "core.untrackedCache=true",
    "core.autocrlf=false",
    "core.safecrlf=false",
    "core.symlinks=true",
    "core.excludesFile=/dev/null",
    "core.attributesFile=/dev/null",
    "core.quotePath=false",
    # One pack per snapshot instead of a file per blob: a first snapshot of 10,000 files
    # writes one file, not 10,000.
    "core.bigFileThreshold=1",
    "gc.auto=0",
    "maintenance.auto=false",
    "safe.directory=*",
    "advice.addEmbeddedRepo=false",
    "user.name=hermes-tui",
    "user.email=checkpoints@hermes-tui",
)


class ShadowError(Exception):
    """The shadow repository could not be read or written; the message is one sentence."""


@dataclass(frozen=True)
class Change:
    """One path that differs between two snapshots: its mode and blob on each side.

    A side where the path does not exist has mode "000000" and `None` for its blob.
    """

    path: str
    old_mode: str
    old_blob: str | None
    new_mode: str
    new_blob: str | None

    @property
    def added(self) -> bool:
        """The path exists only on the new side."""
        return self.old_blob is None

    @property
    def deleted(self) -> bool:
        """The path exists only on the old side."""
        return self.new_blob is None


def git_available() -> bool:
    """Whether a `git` binary is on PATH."""
    return shutil.which("git") is not None


def workspace_key(workspace: Path) -> str:
    """The shadow repository's folder name for a workspace: a hash of its real path."""
    return hashlib.sha256(str(workspace.resolve()).encode()).hexdigest()[:16]


class ShadowRepo:
    """Snapshots of one workspace in a private bare repository, through the git binary."""

    def __init__(
        self,
        workspace: Path,
        root: Path,
        *,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        never: Sequence[Path] = (),
    ) -> None:
        self.workspace = workspace.resolve()
        self.git_dir = root / workspace_key(self.workspace)
        # The app's own folders (the checkpoints, the session database) when they lie inside
        # the workspace: never snapshotted, so never grown into themselves nor rewound.
        self._never = [f"/{_git_pattern(rel)}/" for rel in _inside(self.workspace, [root, *never])]
        self.max_file_bytes = max_file_bytes
        self._index = self.git_dir / "hermes-index"
        self._skipped_file = self.git_dir / "hermes-skipped.json"
        self._lock = threading.Lock()
        self._ready = False
        self._last_tree: tuple[str, tuple[int, int, int]] | None = None
        self.skipped: set[str] = set()

    # -- running git ---------------------------------------------------------------------------
    def _env(self) -> dict[str, str]:
        env = {
            name: value
            for name, value in os.environ.items()
            # None of the user's git settings: they could point git at a program to run.
            if not name.startswith("GIT_") and name not in ("HOME", "XDG_CONFIG_HOME", "PREFIX")
        }
        env.update(
            {
                "HOME": str(self.git_dir),
                "XDG_CONFIG_HOME": str(self.git_dir),
                "GIT_DIR": str(self.git_dir),
                "GIT_WORK_TREE": str(self.workspace),
                "GIT_INDEX_FILE": str(self._index),
                "GIT_CONFIG_NOSYSTEM": "1",
                "GIT_CONFIG_GLOBAL": "/dev/null",
                "GIT_CONFIG_SYSTEM": "/dev/null",
                "GIT_ATTR_NOSYSTEM": "1",
                "GIT_TERMINAL_PROMPT": "0",
                "GIT_OPTIONAL_LOCKS": "0",
                "GIT_NO_REPLACE_OBJECTS": "1",
                "GIT_AUTHOR_DATE": "@0 +0000",
                "GIT_COMMITTER_DATE": "@0 +0000",
                "LC_ALL": "C",
                # glibc gives memory back after every file `add` streams into the pack (tens
                # of thousands of brk calls on a first snapshot); keeping it is 3x faster.
                "MALLOC_TRIM_THRESHOLD_": str(256 * 2**20),
            }
        )
        return env

    def _git(
        self,
        *args: str,
        stdin: bytes | None = None,
        check: bool = True,
        ok: tuple[int, ...] = (0,),
    ) -> bytes:
        command = ["git", *(part for pair in _CONFIG for part in ("-c", pair)), *args]
        try:
            done = subprocess.run(
                command,
                input=stdin,
                env=self._env(),
                # At the top of the work tree: from a folder inside it (the shadow repository
                # itself, when the app's home is in the workspace) git sees only that folder.
                cwd=self.workspace,
                capture_output=True,
                timeout=GIT_TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ShadowError(f"git could not run for the checkpoint ({exc}).") from None
        if check and done.returncode not in ok:
            lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
            said = [line for line in lines if line.startswith(("fatal:", "error:"))] or lines
            reason = said[0].rstrip(".") if said else f"exit code {done.returncode}"
            verb = next(arg for arg in args if not arg.startswith("-"))
            raise ShadowError(f"git {verb} failed for the checkpoint: {reason}.")
        return done.stdout

    def _ensure(self) -> None:
        if self._ready:
            return
        self.git_dir.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not (self.git_dir / "HEAD").exists():
            self.git_dir.mkdir(mode=0o700, exist_ok=True)
            # No template: no sample hooks, no description, nothing we did not write.
            env = self._env()
            env.pop("GIT_WORK_TREE")
            subprocess.run(
                ["git", "init", "-q", "--bare", "--template=", str(self.git_dir)],
                env=env,
                cwd=self.git_dir,
                capture_output=True,
                check=True,
                timeout=GIT_TIMEOUT,
            )
        info = self.git_dir / "info"
        info.mkdir(mode=0o700, exist_ok=True)
        (info / "attributes").write_text(_NEUTRAL_ATTRIBUTES, encoding="utf-8")
        (info / "exclude").write_text("".join(f"{line}\n" for line in self._never), "utf-8")
        try:
            self.skipped = set(json.loads(self._skipped_file.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            self.skipped = set()
        self._ready = True

    # -- snapshots ----------------------------------------------------------------------------
    def snapshot(self, message: str = "checkpoint") -> tuple[str, list[str]]:
        """Record the workspace now; returns (its tree id, paths newly left out for size).

        `ls-files` names what changed since the last snapshot (what `.gitignore` leaves out
        is never read); files over the cap are left out before git reads them, and only then
        do `add -A` and `write-tree` run. Nothing changed: the last tree, one git run. A
        snapshot is a tree: nothing here collects garbage (gc.auto=0), so every tree stays.
        """
        with self._lock, self._shared_lock():
            self._ensure()
            changed = self._changed()
            newly = self._leave_out_large(changed)
            last = self._last_tree
            if changed or last is None or last[1] != self._index_stamp():
                if changed:
                    self._add(changed)
                tree = self._git("write-tree").decode().strip()
                # Reused only while the index is as we left it (not another app's doing).
                self._last_tree = (tree, self._index_stamp())
            else:
                tree = last[0]
            with (self.git_dir / "hermes-snapshots.log").open("a", encoding="utf-8") as log:
                log.write(f"{tree} {message}\n")
            return tree, newly

    @contextlib.contextmanager
    def _shared_lock(self) -> Iterator[None]:
        """Held while the index changes: another app on the same workspace shares it."""
        self.git_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        with open(self.git_dir / "hermes.lock", "a+b") as handle:
            if fcntl is not None:
                fcntl.flock(handle, fcntl.LOCK_EX)
            yield

    def _add(self, changed: dict[str, bool]) -> None:
        """Bring the index to the workspace: only the changed paths when they are few."""
        if len(changed) <= FEW_CHANGES:
            # No second walk of the workspace; literal pathspecs, so no name is a pattern.
            names = b"".join(os.fsencode(path) + b"\0" for path in changed)
            try:
                self._git(
                    "--literal-pathspecs", "add", "-A", "--ignore-errors",
                    "--pathspec-from-file=-", "--pathspec-file-nul", stdin=names, ok=(0, 1),
                )  # fmt: skip
                return
            except ShadowError:
                # A tracked folder became a link ("beyond a symbolic link"), or the like:
                # the whole walk below sorts those out; a held lock fails there too.
                pass
        excludes = [f":(exclude,literal){path}" for path in sorted(self.skipped)]
        # Exit code 1: some file could not be read (it stays as it was); anything else, say a
        # held index lock, fails the snapshot rather than record a stale one.
        self._git("add", "-A", "--ignore-errors", "--", ".", *excludes, ok=(0, 1))

    def _changed(self) -> dict[str, bool]:
        """What differs from the index: each path, and whether it is still on disk."""
        out = self._git(
            "ls-files", "-z", "-t", "--others", "--modified", "--deleted", "--exclude-standard",
        )  # fmt: skip
        changed: dict[str, bool] = {}
        for record in out.split(b"\0"):
            if len(record) < 3:
                continue
            path = os.fsdecode(record[2:])
            if path not in self.skipped:
                # `--modified` names a deleted file too; `R` (removed) wins.
                changed[path] = changed.get(path, True) and record[:1] != b"R"
        return changed

    def _index_stamp(self) -> tuple[int, int, int]:
        try:
            found = os.stat(self._index)
        except OSError:
            return (0, 0, 0)
        return (found.st_ino, found.st_size, found.st_mtime_ns)

    def _leave_out_large(self, changed: dict[str, bool]) -> list[str]:
        """Leave files over the cap out of this and every later snapshot; those newly left."""
        newly = []
        root = str(self.workspace)
        for rel, present in list(changed.items()):
            if not present:
                continue
            try:
                size = os.lstat(os.path.join(root, rel)).st_size
            except OSError:
                continue
            if size > self.max_file_bytes:
                self.skipped.add(rel)
                newly.append(rel)
                del changed[rel]
        if newly:
            self._skipped_file.write_text(json.dumps(sorted(self.skipped)), encoding="utf-8")
        return newly

    # -- reading ------------------------------------------------------------------------------
    def changes(self, old: str, new: str, paths: Sequence[str] = ()) -> list[Change]:
        """The paths that differ from snapshot `old` to snapshot `new` (optionally only `paths`)."""
        with self._lock:
            self._ensure()
            out = self._git(
                "diff-tree", "-r", "-z", "--raw", "--no-renames", "--no-abbrev", old, new,
                "--", *[f":(literal){path}" for path in paths],
            )  # fmt: skip
        return list(_parse_raw(out))

    def read_blobs(self, blobs: Iterable[str]) -> dict[str, bytes]:
        """The content of each blob id, in one `git cat-file --batch`."""
        wanted = list(dict.fromkeys(blobs))
        if not wanted:
            return {}
        with self._lock:
            self._ensure()
            out = self._git("cat-file", "--batch", stdin="".join(f"{b}\n" for b in wanted).encode())
        found: dict[str, bytes] = {}
        offset = 0
        for blob in wanted:
            end = out.index(b"\n", offset)
            header = out[offset:end].split()
            offset = end + 1
            if len(header) < 3 or header[1] == b"missing":
                raise ShadowError(f"the checkpoint lacks a file's content ({blob[:12]}).")
            size = int(header[2])
            found[blob] = out[offset : offset + size]
            offset += size + 1
        return found

    def exists(self, snapshot: str) -> bool:
        """Whether `snapshot` (a tree id) is in the repository."""
        with self._lock:
            self._ensure()
            kind = self._git("cat-file", "-t", snapshot, check=False)
        return kind.strip() == b"tree"


def _inside(workspace: Path, folders: Iterable[Path]) -> list[str]:
    """The workspace-relative names of those `folders` that lie inside the workspace."""
    found = []
    for folder in folders:
        try:
            rel = folder.resolve().relative_to(workspace)
        except ValueError:
            continue
        if rel.parts:
            found.append(rel.as_posix())
    return found


def _git_pattern(rel: str) -> str:
    """`rel` as a gitignore pattern that matches only itself (wildcards escaped)."""
    return "".join(f"\\{char}" if char in "*?[]\\!# " else char for char in rel)


def _parse_raw(out: bytes) -> Iterable[Change]:
    """`git diff-tree --raw -z` records: `:old_mode new_mode old new status\\0path\\0`."""
    fields = out.split(b"\0")
    index = 0
    while index + 1 < len(fields):
        meta = fields[index].decode()
        if not meta.startswith(":"):
            index += 1
            continue
        old_mode, new_mode, old_blob, new_blob, _status = meta[1:].split(" ")[:5]
        path = os.fsdecode(fields[index + 1])
        index += 2
        yield Change(
            path,
            old_mode,
            None if set(old_blob) == {"0"} else old_blob,
            new_mode,
            None if set(new_blob) == {"0"} else new_blob,
        )
