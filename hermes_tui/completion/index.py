"""The workspace's files and folders for the `@` picker, listed off the UI thread (P2).

In a git work tree the list is `git ls-files` (tracked and untracked files, minus what
`.gitignore`, `.git/info/exclude` and the user's excludes leave out), run so that nothing
the repository's configuration names can run (agent/gitlist.py, H8); elsewhere a walk that
reads every `.gitignore` on the way (pathspec's gitignore rules, deeper files winning) and
never enters `.git`. Folders are listed too, with a trailing `/`. A build runs on a thread
of its own and swaps the new list in whole, so readers never wait and never see half a
list; `refresh` asks for a new build when the files may have changed (the picker opens, a
turn ends), at most one build at a time.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from agent.gitlist import list_files

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

MAX_ENTRIES = 300_000
"""A workspace bigger than this (a home directory) is listed this far, and says so."""
STALE_SECONDS = 2.0
"""A refresh asked for within this time of the last build is skipped."""
NEVER_LISTED = frozenset({".git"})


def git_top(workspace: Path) -> bool:
    """Whether `workspace` is inside a git work tree (a `.git` at or above it)."""
    return any((d / ".git").exists() for d in (workspace, *workspace.parents))


def with_folders(files: list[str]) -> list[str]:
    """`files`, then every folder that holds one (`src/`, `src/app/`), in a stable order."""
    folders: dict[str, None] = {}
    for path in files:
        cut = path.rfind("/")
        while cut > 0:
            folder = path[: cut + 1]
            if folder in folders:
                break
            folders[folder] = None
            cut = path.rfind("/", 0, cut)
    return [*files, *sorted(folders)]


def list_git(workspace: Path) -> list[str] | None:
    """`git ls-files` of the workspace (paths relative to it), or None where git fails.

    Through agent/gitlist.py: git never reads the repository's own configuration, so
    nothing it names (fsmonitor, filters, includes) runs (H8).
    """
    return list_files(workspace)


def _ignore_spec(directory: Path) -> GitIgnoreSpec | None:
    """The `.gitignore` of `directory` as a pathspec matcher, or None."""
    try:
        lines = (directory / ".gitignore").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    from pathspec import GitIgnoreSpec

    return GitIgnoreSpec.from_lines(lines.splitlines())


def _ignored(rel: str, specs: list[tuple[str, GitIgnoreSpec]]) -> bool:
    """Whether the nearest `.gitignore` with a rule for `rel` ignores it."""
    for base, spec in reversed(specs):
        result = spec.check_file(rel[len(base) :])
        if result.include is not None:
            return bool(result.include)
    return False


def list_walk(workspace: Path, limit: int = MAX_ENTRIES) -> list[str]:
    """Every file under `workspace` that the `.gitignore` files on the way do not ignore."""
    out: list[str] = []
    root_spec = _ignore_spec(workspace)
    stack: list[tuple[str, list[tuple[str, GitIgnoreSpec]]]] = [
        ("", [("", root_spec)] if root_spec else [])
    ]
    while stack and len(out) < limit:
        rel_dir, specs = stack.pop()
        try:
            with os.scandir(workspace / rel_dir if rel_dir else workspace) as scan:
                entries = sorted(scan, key=lambda e: e.name)
        except OSError:
            continue
        below: list[tuple[str, list[tuple[str, GitIgnoreSpec]]]] = []
        for entry in entries:
            if entry.name in NEVER_LISTED:
                continue
            rel = f"{rel_dir}{entry.name}"
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if _ignored(rel + ("/" if is_dir else ""), specs):
                continue
            if is_dir:
                spec = _ignore_spec(Path(entry.path))
                below.append((rel + "/", [*specs, (rel + "/", spec)] if spec else specs))
            else:
                out.append(rel)
        stack.extend(reversed(below))
    return out[:limit]


class FileIndex:
    """The picker's list of the workspace's paths, rebuilt on a thread when asked."""

    def __init__(
        self,
        workspace: Path,
        *,
        on_built: Callable[[FileIndex], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.workspace = Path(workspace)
        self.on_built = on_built
        self._clock = clock
        self.paths: tuple[str, ...] = ()
        """The files, then the folders (with a trailing `/`); replaced whole by each build."""
        self.version = 0
        self.built_at: float | None = None
        self.build_seconds = 0.0
        self.truncated = False
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._again = False

    @property
    def ready(self) -> bool:
        """True once a first build has finished."""
        return self.built_at is not None

    def refresh(self, *, force: bool = False) -> None:
        """Start a build on a thread unless one runs (then one more follows) or it is fresh."""
        with self._lock:
            if self._thread is not None:
                self._again = True
                return
            fresh = self.built_at is not None and self._clock() - self.built_at < STALE_SECONDS
            if fresh and not force:
                return
            self._thread = threading.Thread(target=self._run, name="file-index", daemon=True)
            self._thread.start()

    def build(self) -> tuple[str, ...]:
        """List the workspace now, on the calling thread; the new list is also kept."""
        started = time.perf_counter()
        files = list_git(self.workspace) if git_top(self.workspace) else None
        if files is None:
            files = list_walk(self.workspace)
        self.truncated = len(files) >= MAX_ENTRIES
        paths = tuple(with_folders(files[:MAX_ENTRIES]))
        self.build_seconds = time.perf_counter() - started
        self.paths = paths
        self.version += 1
        self.built_at = self._clock()
        return paths

    def wait(self, timeout: float = 30.0) -> bool:
        """Wait for a running build (tests and benchmarks); True when none runs after."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return self._thread is None

    def _run(self) -> None:
        while True:
            try:
                self.build()
            except Exception:  # a broken tree must not kill the picker; the old list stays
                import logging

                logging.getLogger("hermes_tui.picker").exception("listing the workspace failed")
            with self._lock:
                if not self._again:
                    self._thread = None
                    break
                self._again = False
        if self.on_built is not None:
            self.on_built(self)
