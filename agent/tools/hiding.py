"""What the shell sandbox hides from commands: the app's own home and the credential places (H9).

A command the sandbox runs sees the filesystem read-only, which still lets it read (and
print, encode, send to the model) every key the user keeps. So inside the sandbox the app's
own home (config.yaml with its keys, state.db with every session, other projects'
checkpoints, projects.yaml's consents) is an empty, read-only folder, and so is each place
of CREDENTIAL_PLACES that exists: a folder becomes an empty read-only tmpfs, a file an
empty read-only file. `sandbox.hide` adds places; `sandbox.allow_read` brings places back
(read-only where they are inside a hidden folder), never the app's home.

Order matters to bubblewrap, which applies mounts one after another: a hidden folder that
holds the workspace (`hide: [~]` with the workspace in `~`) is mounted before the
workspace's own bind, so the workspace shows through it and the rest stays hidden; every
other hidden place comes after the workspace and its guarded paths, so a hidden place inside
the workspace (the app started in `~`) stays hidden; what `allow_read` brings back comes
last, and the hidden folders are made read-only at the very end (a non-recursive remount, so
the workspace inside one stays writable).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

CREDENTIAL_PLACES = (
    "~/.ssh", "~/.gnupg", "~/.aws", "~/.azure", "~/.config/gcloud", "~/.config/gh",
    "~/.config/hub", "~/.docker", "~/.kube", "~/.netrc", "~/.git-credentials",
    "~/.config/git/credentials", "~/.pypirc", "~/.npmrc", "~/.yarnrc.yml",
    "~/.cargo/credentials", "~/.cargo/credentials.toml", "~/.gem/credentials", "~/.pgpass",
    "~/.vault-token", "~/.terraform.d", "~/.local/share/keyrings", "~/.password-store",
    "~/.mozilla", "~/.thunderbird", "~/snap/firefox", "~/.config/google-chrome",
    "~/.config/chromium", "~/.config/BraveSoftware", "~/.config/microsoft-edge",
)  # fmt: skip
"""The usual places of keys, tokens, keyrings and browser profiles: hidden from sandboxed
commands wherever they exist. The one list: docs/sandbox.md, /help and the status panel read it."""


@dataclass(frozen=True)
class Hiding:
    """The places a sandboxed command does not see: the app's homes, CREDENTIAL_PLACES and
    `hide`, less what `allow_read` brings back (paths as written: `~/x` or absolute)."""

    app_homes: tuple[Path, ...] = ()
    hide: tuple[str, ...] = ()
    allow_read: tuple[str, ...] = ()

    def places(self, user_home: Path) -> tuple[str, ...]:
        """The credential places hidden, as written (CREDENTIAL_PLACES, then `hide`), less
        the ones `allow_read` brings back; the app's homes are not among them."""
        allowed = [_expand(p, user_home) for p in self.allow_read]
        listed = dict.fromkeys([*CREDENTIAL_PLACES, *self.hide])
        return tuple(p for p in listed if not _within(_expand(p, user_home), allowed))

    def mounts(self, workspace: Path, user_home: Path) -> tuple[list[str], list[str]]:
        """bubblewrap arguments: (before the workspace's bind, after its guarded paths)."""
        homes = [_real(h) for h in self.app_homes]
        allowed = [_real(_expand(p, user_home)) for p in self.allow_read]
        places = {_real(_expand(place, user_home)) for place in self.places(user_home)}
        before: list[str] = []
        after: list[str] = []
        folders: list[Path] = []
        for path in sorted({*homes, *places}):
            if path not in homes and _within(path, allowed):
                continue  # brought back whole (`allow_read: [~/.config]` shows gh's folder too)
            if not os.path.lexists(path):
                continue  # nothing there to read, and nothing to mount over
            if path.is_dir():
                holds_workspace = workspace == path or workspace.is_relative_to(path)
                (before if holds_workspace else after).extend(["--tmpfs", str(path)])
                folders.append(path)
            else:
                after.extend(["--ro-bind", empty_file(), str(path)])
        for path in allowed:
            inside = any(path != f and path.is_relative_to(f) for f in folders)
            if inside and not _within(path, homes) and os.path.exists(path):
                after.extend(["--ro-bind-try", str(path), str(path)])
        for folder in folders:
            after.extend(["--remount-ro", str(folder)])
        return before, after


def _expand(place: str, user_home: Path) -> Path:
    """`~/x` under `user_home`; an absolute path as it is."""
    if place == "~" or place.startswith("~/"):
        return user_home / place[2:]
    return Path(place)


def _real(path: Path) -> Path:
    """`path` with every link followed: a hidden `~/.ssh -> dotfiles/ssh` hides where it leads."""
    return Path(os.path.realpath(path))


def _within(path: Path, roots: list[Path]) -> bool:
    """True if `path` is one of `roots` or inside one."""
    return any(path == root or path.is_relative_to(root) for root in roots)


_EMPTY: list[str] = []
"""The empty file of this process, once made."""


def empty_file() -> str:
    """An empty file of this process's own to bind over a hidden file: made again if a
    cleaner removed it (bubblewrap refuses a missing source), removed at exit."""
    if _EMPTY and _is_empty(_EMPTY[0]):
        return _EMPTY[0]
    fd, name = tempfile.mkstemp(prefix="hermes-tui-empty-")
    os.close(fd)
    os.chmod(name, 0o400)
    atexit.register(_remove, name)
    _EMPTY[:] = [name]
    return name


def _is_empty(name: str) -> bool:
    try:
        return os.stat(name).st_size == 0
    except OSError:
        return False


def _remove(name: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(name)
