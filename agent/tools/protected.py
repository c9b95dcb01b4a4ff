"""Protected paths: files that some tool runs on its own, so writing them always asks.

A write or edit whose target matches this list asks for approval in every mode but
`yolo`, even where other writes do not (`auto-edit`), and is refused where nobody can be
asked (headless without `--yes`). The list is matched against the real, link-free path
relative to the workspace, one component at a time, after folding each name the way
case-insensitive filesystems compare them (see `fold`).

What is on the list, and why:

- `.git` anywhere (a directory, or the `.git` file of a worktree or submodule): git runs
  hooks from it and commands from its config (`core.fsmonitor`, `core.pager`, aliases) on
  the next `git status`; a nested repository's `.git` counts too.
- `HEAD`, and anything in a directory that holds a `HEAD`: git treats such a directory as
  a bare repository, whose `config` and `hooks/` it runs when the user works there.
- `.husky/`, `.githooks/`, `.pre-commit-config.yaml`: hook managers run these on commit.
- `.envrc`: direnv runs it on `cd`.
- `.vscode/`, `*.code-workspace`, `.idea/`, `.devcontainer/`, `.devcontainer.json`: editors
  run tasks, interpreters and containers named there when the folder is opened.
- `.exrc`, `.nvimrc`, `.nvim.lua`, `.dir-locals.el`, `.dir-locals-2.el`: vim, neovim and
  emacs evaluate these when a file in the directory is opened.

- The app's own home (`$HERMES_TUI_HOME`, and the platform's default `~/.config/hermes-tui`),
  wherever the workspace holds it (the app started in `~`): its config.yaml starts MCP
  servers and decides the sandbox, its projects.yaml holds consents and "always for this
  project" answers (H9). `app_home_reason` checks it, by the target's absolute path.

Left off on purpose: build and test files (`Makefile`, `package.json`, `conftest.py`, ...)
run only when the user runs the build or the tests, and they are the project's ordinary
code; `.env` is data unless direnv's non-default `load_dotenv` is on; `.gitattributes`
only names filters that must be defined in `.git/config`, which is protected.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Sequence
from pathlib import Path

_GIT = "git runs hooks and config commands (core.fsmonitor, core.pager) from it on its own"
_BARE = "git treats a directory holding a HEAD file as a repository and runs its config and hooks"
_HOOKS = "a git hook manager runs it on commit"
_EDITOR = "an editor runs the tasks and commands it names when the folder is opened"
_MODELINE = "an editor evaluates it when a file in the directory is opened"

# A directory name anywhere on the path protects everything under it (and itself).
PROTECTED_DIRS: dict[str, str] = {
    ".git": _GIT,
    "git~1": _GIT,  # the 8.3 short name of .git on NTFS
    ".husky": _HOOKS,
    ".githooks": _HOOKS,
    ".vscode": _EDITOR,
    ".idea": _EDITOR,
    ".devcontainer": _EDITOR,
}
# A file name protects that file in any directory.
PROTECTED_FILES: dict[str, str] = {
    "head": _BARE,
    ".pre-commit-config.yaml": _HOOKS,
    ".envrc": "direnv runs it when the user enters the directory",
    ".devcontainer.json": _EDITOR,
    ".exrc": _MODELINE,
    ".nvimrc": _MODELINE,
    ".nvim.lua": _MODELINE,
    ".dir-locals.el": _MODELINE,
    ".dir-locals-2.el": _MODELINE,
}
PROTECTED_SUFFIXES: dict[str, str] = {".code-workspace": _EDITOR}
APP_HOME = (
    "it is in hermes-tui's own home, whose config starts MCP servers and sets the sandbox and "
    "whose projects.yaml holds consents and approvals"
)

# Code points HFS+ ignores in names, so ".g\u200cit" is ".git" there (git's own list).
_IGNORABLE = frozenset(
    "\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
    "\u206a\u206b\u206c\u206d\u206e\u206f\ufeff"
)


def fold(name: str) -> str:
    """`name` as a case-insensitive filesystem would compare it (case, HFS+, NTFS quirks)."""
    text = unicodedata.normalize("NFC", name)
    text = "".join(ch for ch in text if ch not in _IGNORABLE).casefold()
    # NTFS drops trailing dots and spaces, so ".git. " names ".git" there.
    return text.rstrip(" .") or text


def protected_reason(workspace: Path, parts: Sequence[str]) -> str:
    """Why writing the workspace-relative `parts` runs code on its own, or "" if it does not."""
    folded = [fold(part) for part in parts]
    for name in folded:
        if name in PROTECTED_DIRS:
            return PROTECTED_DIRS[name]
    if folded:
        last = folded[-1]
        if last in PROTECTED_FILES:
            return PROTECTED_FILES[last]
        for suffix, why in PROTECTED_SUFFIXES.items():
            if last.endswith(suffix):
                return why
    for depth in range(len(parts)):
        if _holds_head(workspace.joinpath(*parts[:depth])):
            return _BARE
    return ""


def app_home_reason(path: Path, homes: Sequence[Path]) -> str:
    """Why writing the absolute, link-free `path` is protected as the app's own home (one of
    `homes`, links followed), or "" when it is outside them; names compared folded."""
    folded = [fold(part) for part in path.parts]
    for home in homes:
        prefix = [fold(part) for part in home.parts]
        if folded[: len(prefix)] == prefix:
            return APP_HOME
    return ""


def _holds_head(directory: Path) -> bool:
    """True if `directory` has an entry named HEAD (any case on a case-insensitive disk)."""
    try:
        os.lstat(directory / "HEAD")
    except OSError:
        return False
    return True
