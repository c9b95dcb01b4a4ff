"""The shell sandbox: run_shell under bubblewrap, where it works (X3).

Under the sandbox a command sees the whole filesystem read-only except the workspace and a
private `/tmp`, and neither the app's own home nor the usual credential places (hiding.py:
each is an empty read-only folder or file inside); the workspace's `.git` and the paths
that run code on their own (hooks, `.envrc`, editor task folders) that exist, at any depth
(a nested repository's `.git` too), stay read-only; no Unix socket can be opened (a
daemon's socket is reachable through a read-only mount: see seccomp.py), unless
`tools.shell.unix_sockets: true`, and `/run` and the session's runtime folder are empty
besides; the network is a loopback of its own (nothing reachable) unless
`tools.shell.network: true`.
The command runs in the process group run_shell kills on timeout and stop, and dies with
the app.

`sandbox: auto` uses bubblewrap when a trial run works and says why when it does not;
`sandbox: on` refuses to run shell commands without it; `sandbox: off` never uses it.
Elsewhere than Linux (macOS `sandbox-exec` is not used) there is no sandbox: `auto` says so.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
import sys
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from agent.kinds import SandboxMode
from agent.tools.hiding import Hiding
from agent.tools.seccomp import unix_socket_filter

INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: `sudo apt-get install bubblewrap`)"
READ_ONLY_NAMES = (
    ".git", ".husky", ".githooks", ".vscode", ".idea", ".devcontainer", ".envrc",
    ".pre-commit-config.yaml", ".devcontainer.json", ".exrc", ".nvimrc", ".nvim.lua",
    ".dir-locals.el", ".dir-locals-2.el",
)  # fmt: skip
"""Workspace entries a sandboxed command may not write (agent/tools/protected.py says why),
wherever they are: a nested repository's `.git` runs hooks as the top one does."""
SCAN_ENTRIES = 20_000
"""At most this many workspace entries are read looking for those (nearest first)."""
SCAN_SKIPPED = frozenset({"node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache"})
"""Folders of installed packages and caches: not searched."""
PROBE_TIMEOUT = 10.0
SOCKET_FOLDERS = ("/run", "/var/run")
"""Where the daemons' sockets live (docker, the system and session buses, systemd, ssh and
gpg agents): a read-only mount does not stop a connect(), so these are empty folders inside.
"""
RESOLVER = "/etc/resolv.conf"
"""The resolver's configuration: bound back when it lives in a hidden socket folder."""
SOCKET_VARIABLES = ("SSH_AUTH_SOCK", "DBUS_SESSION_BUS_ADDRESS", "DOCKER_HOST", "GPG_AGENT_INFO")
"""Left out of a sandboxed command's environment (`confined_env`): they point at those sockets."""


@dataclass(frozen=True)
class Probe:
    """Whether bubblewrap runs here, and the sentence that says why not; whether it can
    install the Unix-socket filter here too."""

    works: bool
    binary: str | None = None
    reason: str = ""
    filters: bool = False


@functools.cache
def probe(binary: str | None = None) -> Probe:
    """Try bubblewrap once per process with the namespaces run_shell asks for."""
    if not sys.platform.startswith("linux"):
        return Probe(False, None, f"there is no shell sandbox on {sys.platform} (Linux only)")
    found = binary or shutil.which("bwrap")
    if found is None:
        return Probe(False, None, f"bubblewrap is not installed: {INSTALL_HINT}")
    trial = trial_command(found)
    try:
        done = subprocess.run(trial, capture_output=True, timeout=PROBE_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Probe(False, found, f"bubblewrap could not start ({exc})")
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        why = said[-1].removeprefix("bwrap: ") if said else f"exit code {done.returncode}"
        return Probe(
            False,
            found,
            f"bubblewrap is installed but cannot run here ({why}); it needs user namespaces",
        )
    return Probe(True, found, filters=_filter_works(trial))


def trial_command(binary: str) -> list[str]:
    """The trial run: `true` under `binary` with the namespaces run_shell asks for."""
    return [binary, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--unshare-net", "--unshare-pid", "--die-with-parent", "true"]  # fmt: skip


def _filter_works(trial: list[str]) -> bool:
    """Whether bubblewrap installs the Unix-socket filter here (a kernel without seccomp
    would fail every command)."""
    try:
        with socket_filter() as fd:
            if fd is None:
                return False
            command = [*trial[:-1], "--seccomp", str(fd), trial[-1]]
            done = subprocess.run(
                command,
                capture_output=True,  # bubblewrap's complaint is not for the terminal
                timeout=PROBE_TIMEOUT,
                check=False,  # pragma: no mutate (the default: the exit code is read below)
                pass_fds=(fd,),
            )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


@contextlib.contextmanager
def socket_filter() -> Iterator[int | None]:
    """A pipe's read end holding the filter program, for bubblewrap's `--seccomp` (None on a
    machine whose system calls seccomp.py does not know); closed when the block ends."""
    program = unix_socket_filter()
    if program is None:
        yield None
        return
    read, write = os.pipe()
    try:
        os.write(write, program)  # a few hundred bytes: far below a pipe's buffer
        os.close(write)
        write = -1
        yield read
    finally:
        os.close(read)
        if write >= 0:
            os.close(write)


@dataclass(frozen=True)
class Sandbox:
    """How run_shell commands are confined in this run: `active` or not, and why."""

    mode: SandboxMode
    network: bool
    state: Probe
    unix_sockets: bool = False
    hiding: Hiding = field(default_factory=Hiding)

    @classmethod
    def decide(
        cls,
        mode: SandboxMode,
        *,
        network: bool = False,
        unix_sockets: bool = False,
        hiding: Hiding | None = None,
    ) -> Sandbox:
        """The sandbox for `mode`: `off` never probes; `auto` and `on` try bubblewrap."""
        hiding = hiding or Hiding()
        if mode == SandboxMode.OFF:
            off = Probe(False, None, "the sandbox is off (`sandbox: off`)")
            return cls(mode, network, off, unix_sockets, hiding)
        return cls(mode, network, probe(), unix_sockets, hiding)

    @property
    def filters_sockets(self) -> bool:
        """True when commands run with Unix sockets closed to them."""
        return self.active and self.state.filters and not self.unix_sockets

    @property
    def active(self) -> bool:
        """True when commands run under bubblewrap."""
        return self.mode != SandboxMode.OFF and self.state.works

    def confines(self, workspace: Path) -> bool:
        """True when commands in `workspace` run under bubblewrap and cannot write the app's
        own home: not so in a workspace inside it, which they see and write (H9)."""
        return self.active and not any(
            workspace == home or workspace.is_relative_to(home) for home in self.hiding.app_homes
        )

    @property
    def refusal(self) -> str | None:
        """With `sandbox: on` and no working bubblewrap: the sentence every command gets."""
        if self.mode == SandboxMode.ON and not self.state.works:
            return (
                f"Refused: `sandbox: on` runs shell commands only under bubblewrap, and "
                f"{self.state.reason}; or set `sandbox: auto` to run them unconfined."
            )
        return None

    def panel_label(self) -> str:
        """What the status panel says after "sandbox" ("" when it is off by choice)."""
        if self.active:
            opened = [
                name for name, on in (("net", self.network), ("sockets", self.unix_sockets)) if on
            ]
            return " + ".join(["bwrap", *opened])
        if self.mode == SandboxMode.OFF:
            return ""
        return "refusing shell" if self.refusal else "unconfined"

    def hidden_places(self) -> tuple[str, ...]:
        """The credential places commands do not see, as written ("~/.ssh"...); () when off."""
        return self.hiding.places(Path.home()) if self.active else ()

    def hidden_label(self) -> str:
        """What the status panel says the sandbox hides ("" when commands are not confined)."""
        if not self.active:
            return ""
        return f"home + {len(self.hidden_places())} credential places hidden"

    def describe(self) -> str:
        """The sentence about the sandbox in the run_shell tool description (the truth)."""
        if self.active:
            net = (
                "The network is available."
                if self.network
                else "There is no network access (only a private loopback)."
            )
            services = (
                "no Unix socket can be opened, so no host service (docker, the session bus, "
                "ssh and gpg agents) can be reached"
                if self.filters_sockets
                else "host services listening on Unix sockets outside /run may be reachable"
            )
            return (
                "Commands run in a sandbox: the filesystem is read-only except the workspace "
                "and a private /tmp, every .git in the workspace is read-only, the app's own "
                "home and the user's credential folders (~/.ssh, ~/.aws, ...) are empty, and "
                f"{services}. {net}"
            )
        if self.refusal:
            return "Shell commands are refused: the required sandbox is not available."
        return "Commands run unconfined, with the user's permissions."

    def wrap(
        self,
        argv: list[str],
        workspace: Path,
        *,
        guarded: set[str] | None = None,
        seccomp_fd: int | None = None,
        read_only: bool = False,
    ) -> list[str]:
        """`argv` under bubblewrap, confined to `workspace`: `guarded` (workspace-relative,
        from `guarded_paths`) stay read-only; the hidden places are empty (hiding.py says in
        which order); `seccomp_fd` is the filter (`socket_filter`); `read_only` (plan mode,
        N1) leaves the workspace read-only too."""
        assert self.state.binary is not None
        ws = str(workspace)
        around, over = self.hiding.mounts(workspace, Path.home())
        bind = "--ro-bind" if read_only else "--bind"
        args = [self.state.binary, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                "--tmpfs", "/tmp", *_hidden_sockets(self.network), *around,
                bind, ws, ws]  # fmt: skip
        for rel in sorted(guarded_paths(workspace) if guarded is None else guarded):
            path = workspace / rel
            # A link (`.git -> repo.git/`) is kept read-only where it leads, when that is
            # inside the workspace; outside, everything is read-only already.
            real = path.resolve() if path.is_symlink() else path
            if real == workspace or not real.is_relative_to(workspace) or not real.exists():
                continue
            # -try: one removed since the walk is simply not there (its creation is named).
            args += ["--ro-bind-try", str(real), str(real)]
        args += over
        if not self.network:
            args.append("--unshare-net")
        if seccomp_fd is not None:
            args += ["--seccomp", str(seccomp_fd)]
        args += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent"]
        return [*args, "--chdir", ws, "--", *argv]


def guarded_paths(workspace: Path, *, limit: int = SCAN_ENTRIES) -> set[str]:
    """Workspace-relative paths of the READ_ONLY_NAMES that exist, at any depth: a walk
    nearest first that follows no link, skips SCAN_SKIPPED folders, the guarded ones
    themselves and folders it cannot read, and reads at most `limit` entries."""
    found: set[str] = set()
    names = set(READ_ONLY_NAMES)
    folders: deque[str] = deque([""])
    budget = limit
    while folders and budget > 0:
        folder = folders.popleft()
        try:
            with os.scandir(workspace / folder) as entries:  # `workspace / ""` is workspace
                for entry in entries:
                    budget -= 1
                    rel = f"{folder}/{entry.name}" if folder else entry.name
                    if entry.name in names:
                        found.add(rel)
                    elif (
                        entry.name not in SCAN_SKIPPED and not entry.is_symlink() and entry.is_dir()
                    ):
                        folders.append(rel)
                    if budget <= 0:
                        break
        except OSError:
            continue
    return found


def _hidden_sockets(network: bool) -> list[str]:
    """Empty folders over the host's sockets (a command without network could otherwise ask
    a daemon, say docker or systemd, to run something outside); DNS stays with the network."""
    folders = [f for f in SOCKET_FOLDERS if os.path.isdir(f) and not os.path.islink(f)]
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if (
        runtime is not None
        and os.path.isabs(runtime)
        and os.path.isdir(runtime)
        and not runtime.startswith("/run/")  # under /run: hidden with it already
    ):
        folders.append(runtime)
    args = [part for folder in folders for part in ("--tmpfs", folder)]
    resolver = os.path.realpath(RESOLVER)
    if network and any(resolver.startswith(f"{folder}/") for folder in folders):
        args += ["--ro-bind-try", resolver, resolver]
    return args


def confined_env(env: dict[str, str]) -> dict[str, str]:
    """A sandboxed command's environment: without the variables naming the host's sockets."""
    return {name: value for name, value in env.items() if name not in SOCKET_VARIABLES}
