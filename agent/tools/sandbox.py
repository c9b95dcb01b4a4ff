"""The shell sandbox: run_shell under bubblewrap, where it works (X3).

Under the sandbox a command sees the whole filesystem read-only except the workspace and a
private `/tmp`; the workspace's `.git` and the paths that run code on their own (hooks,
`.envrc`, editor task folders) that exist stay read-only too; `/run` and the session's
runtime folder are empty (a daemon's socket is reachable through a read-only mount); the
network is a loopback of its own (nothing reachable) unless `tools.shell.network: true`.
The command runs in the process group run_shell kills on timeout and stop, and dies with
the app.

`sandbox: auto` uses bubblewrap when a trial run works and says why when it does not;
`sandbox: on` refuses to run shell commands without it; `sandbox: off` never uses it.
Elsewhere than Linux (macOS `sandbox-exec` is not used) there is no sandbox: `auto` says so.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from agent.kinds import SandboxMode

INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: `sudo apt-get install bubblewrap`)"
READ_ONLY_NAMES = (
    ".git", ".husky", ".githooks", ".vscode", ".idea", ".devcontainer", ".envrc",
    ".pre-commit-config.yaml", ".devcontainer.json", ".exrc", ".nvimrc", ".nvim.lua",
    ".dir-locals.el", ".dir-locals-2.el",
)  # fmt: skip
"""Workspace entries a sandboxed command may not write (agent/tools/protected.py says why)."""
PROBE_TIMEOUT = 10.0
SOCKET_FOLDERS = ("/run", "/var/run")
"""Where the daemons' sockets live (docker, the system and session buses, systemd, ssh and
gpg agents): a read-only mount does not stop a connect(), so these are empty folders inside.
"""
SOCKET_VARIABLES = ("SSH_AUTH_SOCK", "DBUS_SESSION_BUS_ADDRESS", "DOCKER_HOST", "GPG_AGENT_INFO")
"""Left out of a sandboxed command's environment (`confined_env`): they point at those sockets."""


@dataclass(frozen=True)
class Probe:
    """Whether bubblewrap runs here, and the sentence that says why not."""

    works: bool
    binary: str | None = None
    reason: str = ""


@functools.cache
def probe(binary: str | None = None) -> Probe:
    """Try bubblewrap once per process with the namespaces run_shell asks for."""
    if not sys.platform.startswith("linux"):
        return Probe(False, None, f"there is no shell sandbox on {sys.platform} (Linux only)")
    found = binary or shutil.which("bwrap")
    if found is None:
        return Probe(False, None, f"bubblewrap is not installed: {INSTALL_HINT}")
    trial = [found, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
             "--unshare-net", "--unshare-pid", "--die-with-parent", "true"]  # fmt: skip
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
    return Probe(True, found)


@dataclass(frozen=True)
class Sandbox:
    """How run_shell commands are confined in this run: `active` or not, and why."""

    mode: SandboxMode
    network: bool
    state: Probe

    @classmethod
    def decide(cls, mode: SandboxMode, *, network: bool = False) -> Sandbox:
        """The sandbox for `mode`: `off` never probes; `auto` and `on` try bubblewrap."""
        if mode == SandboxMode.OFF:
            return cls(mode, network, Probe(False, None, "the sandbox is off (`sandbox: off`)"))
        return cls(mode, network, probe())

    @property
    def active(self) -> bool:
        """True when commands run under bubblewrap."""
        return self.mode != SandboxMode.OFF and self.state.works

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
            return "bwrap" + (" + net" if self.network else "")
        if self.mode == SandboxMode.OFF:
            return ""
        return "refusing shell" if self.refusal else "unconfined"

    def describe(self) -> str:
        """The sentence about the sandbox in the run_shell tool description (the truth)."""
        if self.active:
            net = (
                "The network is available."
                if self.network
                else "There is no network access (only a private loopback)."
            )
            return (
                "Commands run in a sandbox: the filesystem is read-only except the workspace "
                "and a private /tmp, the workspace's .git is read-only, and no host service "
                "(docker, the session bus, ssh agents) can be reached. " + net
            )
        if self.refusal:
            return "Shell commands are refused: the required sandbox is not available."
        return "Commands run unconfined, with the user's permissions."

    def wrap(self, argv: list[str], workspace: Path) -> list[str]:
        """`argv` under bubblewrap, confined to `workspace`."""
        assert self.state.binary is not None
        ws = str(workspace)
        args = [self.state.binary, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                "--tmpfs", "/tmp", *_hidden_sockets(self.network),
                "--bind", ws, ws]  # fmt: skip
        for name in READ_ONLY_NAMES:
            path = workspace / name
            if not path.exists():
                continue
            # A link (`.git -> repo.git/`) is kept read-only where it leads, when that is
            # inside the workspace; outside, everything is read-only already.
            real = path.resolve() if path.is_symlink() else path
            if real == workspace or not real.is_relative_to(workspace):
                continue
            args += ["--ro-bind", str(real), str(real)]
        if not self.network:
            args.append("--unshare-net")
        args += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent"]
        return [*args, "--chdir", ws, "--", *argv]


def _hidden_sockets(network: bool) -> list[str]:
    """Empty folders over the host's sockets (a command without network could otherwise ask
    a daemon, say docker or systemd, to run something outside); DNS stays with the network."""
    folders = [f for f in SOCKET_FOLDERS if os.path.isdir(f) and not os.path.islink(f)]
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(runtime) and os.path.isdir(runtime) and not runtime.startswith("/run/"):
        folders.append(runtime)
    args = [part for folder in folders for part in ("--tmpfs", folder)]
    resolver = os.path.realpath("/etc/resolv.conf")
    if network and any(resolver.startswith(f"{folder}/") for folder in folders):
        args += ["--ro-bind-try", resolver, resolver]
    return args


def confined_env(env: dict[str, str]) -> dict[str, str]:
    """A sandboxed command's environment: without the variables naming the host's sockets."""
    return {name: value for name, value in env.items() if name not in SOCKET_VARIABLES}
