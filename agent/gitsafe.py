"""Every git command the app runs, with no configuration able to start a program (H8).

git runs programs that its configuration names: `core.fsmonitor` on every index read,
hooks, pagers, external diff and textconv drivers, clean/smudge filters, ssh commands,
credential helpers, and any of those from a file an `include.path` pulls in. A repository
(a cloned tarball, or a `.git` a model's shell command just made) controls that
configuration, so the app never lets git read it: every command runs with `GIT_DIR` at a
repository the app owns (its checkpoints, or a private folder made for one listing, see
gitlist.py), with no system or global configuration, `HOME` and `XDG_CONFIG_HOME` pointed
at that folder, every `GIT_*` variable of the parent dropped, no prompts, no optional
locks, no transport, and settings that switch the hooks and fsmonitor off on top.

This is the only module that starts git; tests/unit/architecture/test_git_inert.py fails
when anything else in agent/, storage/ or hermes_tui/ does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

GIT = "git"

INERT_SETTINGS = (
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "credential.helper=",
    "protocol.allow=never",
)
"""Given on every command line, after which only the app's own settings follow: even the
app's own repository cannot turn these back on."""

_DROPPED = frozenset({"HOME", "XDG_CONFIG_HOME", "PREFIX", "PAGER", "SSH_ASKPASS"})
"""Besides every `GIT_*` variable: where git would look for the user's configuration,
excludes and attributes, and what would pick a program for it to run."""


def available() -> bool:
    """Whether a `git` binary is on PATH."""
    return shutil.which(GIT) is not None


def inert_env(
    git_dir: Path,
    *,
    work_tree: Path | None = None,
    index_file: Path | None = None,
    object_dir: Path | None = None,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment for git on the app's repository `git_dir`: nothing of the user's.

    `extra` adds variables of the caller's own (dates, locale, allocator); it cannot undo
    what makes git inert, which is applied after it.
    """
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("GIT_") and name not in _DROPPED
    }
    env.update(extra or {})
    place = {"GIT_DIR": git_dir, "GIT_WORK_TREE": work_tree, "GIT_INDEX_FILE": index_file}
    place["GIT_OBJECT_DIRECTORY"] = object_dir
    env.update({name: str(path) for name, path in place.items() if path is not None})
    env.update(
        {
            # The app's folder stands in for the user's home: no ~/.gitconfig, no
            # ~/.config/git/{config,ignore,attributes}.
            "HOME": str(git_dir),
            "XDG_CONFIG_HOME": str(git_dir),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_CONFIG_SYSTEM": "/dev/null",
            "GIT_ATTR_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_NO_REPLACE_OBJECTS": "1",
            # No transport at all: an empty allow list refuses every protocol, ext:: too.
            "GIT_ALLOW_PROTOCOL": "",
            "GIT_PROTOCOL_FROM_USER": "0",
            "GIT_PAGER": "cat",
            "GIT_EDITOR": ":",
        }
    )
    return env


def _argv(args: Sequence[str], settings: Sequence[str] = ()) -> list[str]:
    """The git command line: the inert settings, then the caller's `settings`, then `args`."""
    pairs = (*INERT_SETTINGS, *settings)
    return [GIT, "--no-pager", *(part for pair in pairs for part in ("-c", pair)), *args]


def run(
    args: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    *,
    timeout: float,
    stdin: bytes | None = None,
    settings: Sequence[str] = (),
) -> subprocess.CompletedProcess[bytes]:
    """Run git to the end, its output captured; `env` comes from `inert_env`.

    Raises what `subprocess.run` raises (OSError, TimeoutExpired); never checks the code.
    """
    _check(env)
    return subprocess.run(
        _argv(args, settings),
        input=stdin,
        env=dict(env),
        cwd=cwd,
        capture_output=True,
        timeout=timeout,
        check=False,
    )


def start(
    args: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    *,
    stdin: IO[bytes],
    settings: Sequence[str] = (),
) -> subprocess.Popen[bytes]:
    """Start git reading `stdin` (an open file), its output dropped; `env` from `inert_env`."""
    _check(env)
    return subprocess.Popen(
        _argv(args, settings),
        stdin=stdin,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(env),
        cwd=cwd,
    )


def _check(env: Mapping[str, str]) -> None:
    """Refuse an environment that would let git find or read a configuration of its own."""
    if not env.get("GIT_DIR") or env.get("GIT_CONFIG_GLOBAL") != "/dev/null":
        raise ValueError("git runs only with an environment from gitsafe.inert_env")
