"""A git work tree's files as `git ls-files` lists them, without reading its configuration (H8).

`-c` settings cannot neutralise a filter driver whose name the repository picks, nor a file
an `include.path` names, so git never reads the repository's `.git/config` here at all: it
runs with `GIT_DIR` at a private folder made for the one listing (mode 0700) holding our own
minimal `config` (the format version, and the object format when the repository's is
sha256, read as data), a `HEAD`, and `info/exclude` built from the repository's
`info/exclude` and the user's global excludes file (both read as data). `GIT_INDEX_FILE` is
the repository's index (through the `gitdir:` file and `commondir` of a worktree or a
submodule; git finds a split index's shared part beside it) and `GIT_WORK_TREE` its top, so
tracked, untracked and ignored files are what plain `git ls-files -z --cached --others
--exclude-standard` says. What it cannot read (an index git rejects, a `.git` that is no
repository) is None, and the caller walks instead.

Not carried over from the repository's configuration: `core.excludesFile` (a path the
repository chooses) and every other setting but `core.ignoreCase`.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from agent import gitsafe

TIMEOUT_SECONDS = 20.0
MAX_CONFIG_BYTES = 1 << 20
"""A configuration file read as data is read this far."""


@dataclass(frozen=True)
class Repository:
    """Where a work tree's repository keeps what a listing reads."""

    top: Path
    git_dir: Path
    """The work tree's own git folder: its index (and a split index's shared files)."""
    common_dir: Path
    """Shared by every worktree: config, `info/exclude`, objects."""


def find_repository(workspace: Path) -> Repository | None:
    """The repository whose work tree holds `workspace` (the nearest `.git` up), or None."""
    for top in (workspace, *workspace.parents):
        dot_git = top / ".git"
        if dot_git.is_dir():
            git_dir = dot_git
        elif dot_git.is_file():
            target = _gitfile_target(dot_git)
            if target is None:
                return None
            git_dir = target
        elif dot_git.exists() or os.path.lexists(dot_git):
            return None
        else:
            continue
        if not (git_dir / "HEAD").is_file():
            return None
        return Repository(top, git_dir, _common_dir(git_dir))
    return None


def _gitfile_target(dot_git: Path) -> Path | None:
    """The folder a `.git` file (`gitdir: <path>`) names, relative to the file's folder."""
    try:
        text = dot_git.read_text(encoding="utf-8", errors="surrogateescape")[:4096]
    except OSError:
        return None
    first = text.splitlines()[0] if text else ""
    if not first.startswith("gitdir:"):
        return None
    target = Path(first[len("gitdir:") :].strip())
    target = target if target.is_absolute() else dot_git.parent / target
    return target if target.is_dir() else None


def _common_dir(git_dir: Path) -> Path:
    """A linked worktree's `commondir` (the main repository's git folder), else `git_dir`."""
    try:
        named = (git_dir / "commondir").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return git_dir
    common = Path(named) if Path(named).is_absolute() else git_dir / named
    return common if common.is_dir() else git_dir


_SECTION = re.compile(r'\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]\s*(.*)$')
_ENTRY = re.compile(r"\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$")


def config_value(path: Path, section: str, key: str) -> str | None:
    """The last value of `section.key` in one git config file, read as data (no includes).

    A small reader for the few plain settings we take over; what it cannot read is None.
    """
    try:
        with path.open("rb") as handle:
            text = handle.read(MAX_CONFIG_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return None
    current, found = "", None
    for raw in text.splitlines():
        line = raw
        header = _SECTION.match(line)
        if header:
            current = header.group(1).lower() + (f'"{header.group(2)}' if header.group(2) else "")
            line = header.group(3)
            if not line.strip():
                continue
        entry = _ENTRY.match(line)
        if entry and current == section.lower() and entry.group(1).lower() == key.lower():
            found = "true" if entry.group(2) is None else _unquote(entry.group(2))
    return found


def _unquote(value: str) -> str:
    """A config value without its comment, quotes and escapes."""
    out, quoted, index = [], False, 0
    while index < len(value):
        char = value[index]
        if char == "\\" and index + 1 < len(value):
            index += 1
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(value[index], value[index]))
        elif char == '"':
            quoted = not quoted
        elif char in "#;" and not quoted:
            break
        else:
            out.append(char)
        index += 1
    return "".join(out).strip()


def user_excludes_file() -> Path | None:
    """The user's global excludes file, found as git would (read as data, no includes)."""
    home = Path(os.environ.get("HOME") or Path.home())
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    configs = [xdg / "git/config", home / ".gitconfig"]
    if os.environ.get("GIT_CONFIG_GLOBAL"):
        configs = [Path(os.environ["GIT_CONFIG_GLOBAL"])]
    named = None
    for config in configs:
        named = config_value(config, "core", "excludesFile") or named
    if named is None:
        return xdg / "git/ignore"
    if named.startswith("~/"):
        return home / named[2:]
    return Path(named) if Path(named).is_absolute() else None


def _read(path: Path | None) -> str:
    if path is None:
        return ""
    try:
        with path.open("rb") as handle:
            return handle.read(MAX_CONFIG_BYTES).decode("utf-8", errors="surrogateescape")
    except OSError:
        return ""


def _private_repository(folder: Path, repo: Repository) -> None:
    """Fill `folder` with the minimal repository the listing runs on (see the module)."""
    config = ["[core]", "\trepositoryformatversion = 0", "\tbare = false"]
    if (config_value(repo.common_dir / "config", "extensions", "objectFormat") or "") == "sha256":
        config = ["[core]", "\trepositoryformatversion = 1", "\tbare = false"]
        config += ["[extensions]", "\tobjectformat = sha256"]
    if (config_value(repo.common_dir / "config", "core", "ignoreCase") or "") == "true":
        config.append("[core]\n\tignorecase = true")
    (folder / "config").write_text("\n".join(config) + "\n", encoding="utf-8")
    (folder / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
    for name in ("refs", "objects", "info"):
        (folder / name).mkdir()
    excludes = _read(repo.common_dir / "info" / "exclude")
    excludes += "\n" + _read(user_excludes_file())
    (folder / "info" / "exclude").write_text(excludes, encoding="utf-8", errors="surrogateescape")


@contextlib.contextmanager
def inert_work_tree(workspace: Path) -> Iterator[dict[str, str] | None]:
    """gitsafe's environment for git on the work tree that holds `workspace`, through a
    private folder that lives while the block runs (see the module); None outside one."""
    repo = find_repository(workspace.resolve())
    if repo is None:
        yield None
        return
    objects = repo.common_dir / "objects"
    with tempfile.TemporaryDirectory(prefix="hermes-git-") as private:
        folder = Path(private)
        _private_repository(folder, repo)
        yield gitsafe.inert_env(
            folder,
            work_tree=repo.top,
            index_file=repo.git_dir / "index",
            object_dir=objects if objects.is_dir() else None,
        )


def list_files(workspace: Path) -> list[str] | None:
    """`git ls-files` of the workspace (paths relative to it) run inert, or None."""
    try:
        with inert_work_tree(workspace) as env:
            if env is None:
                return None
            done = gitsafe.run(
                ["ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                env,
                workspace,
                timeout=TIMEOUT_SECONDS,
            )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    text = done.stdout.decode("utf-8", errors="surrogateescape")
    return list(dict.fromkeys(p for p in text.split("\0") if p))
