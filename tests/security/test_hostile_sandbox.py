"""The shell sandbox (X3): a hostile command confined by bubblewrap, and the sentences when
bubblewrap is missing or cannot run. The detection and refusal tests always run; the
confinement tests skip, saying why, where bubblewrap cannot run."""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from agent.kinds import ApprovalMode, SandboxMode
from agent.tools import sandbox as sandbox_module
from agent.tools.registry import ToolContext, default_registry
from agent.tools.sandbox import Probe, Sandbox, probe

REAL = probe()
needs_bwrap = pytest.mark.skipif(not REAL.works, reason=f"no sandbox here: {REAL.reason}")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    return root


def run(command: str, workspace: Path, sandbox: Sandbox, **kw) -> tuple[bool, str]:
    ctx = ToolContext(workspace=workspace, approval_mode="yolo", sandbox=sandbox, **kw)
    result = default_registry().run("run_shell", {"command": command}, ctx)
    return result.ok, result.output


def fake_bwrap(tmp_path: Path, stderr: str) -> str:
    """A bwrap that fails like one without user namespaces."""
    path = tmp_path / "bwrap"
    path.write_text(f"#!/bin/sh\necho '{stderr}' >&2\nexit 1\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


# -- detection and refusal (always run) ----------------------------------------------------


def test_auto_without_bwrap_says_so_and_runs_unconfined(monkeypatch, workspace):
    monkeypatch.setattr(sandbox_module.shutil, "which", lambda _name: None)
    found = sandbox_module.probe.__wrapped__()
    assert not found.works and "bubblewrap is not installed" in found.reason
    assert "apt-get install bubblewrap" in found.reason
    box = Sandbox(SandboxMode.AUTO, False, found)
    assert not box.active and box.refusal is None and box.panel_label() == "unconfined"
    ok, _output = run("echo free > out.txt", workspace, box)
    assert ok and (workspace / "out.txt").exists()
    assert "unconfined" in box.describe()
    from agent.tools.shell import run_shell

    ctx = ToolContext(workspace=workspace, approval_mode="ask", sandbox=box)
    detail = run_shell(ctx, {"command": "true"}).request().detail
    assert "sandbox: none, the command runs unconfined (bubblewrap is not installed" in detail


def test_on_without_bwrap_refuses_with_the_sentence(monkeypatch, workspace):
    monkeypatch.setattr(sandbox_module.shutil, "which", lambda _name: None)
    box = Sandbox(SandboxMode.ON, False, sandbox_module.probe.__wrapped__())
    ok, output = run("echo nope > out.txt", workspace, box)
    assert not ok and not (workspace / "out.txt").exists()
    assert output == (
        "Refused: `sandbox: on` runs shell commands only under bubblewrap, and bubblewrap is "
        "not installed: install bubblewrap (Debian/Ubuntu: `sudo apt-get install bubblewrap`);"
        " or set `sandbox: auto` to run them unconfined."
    )
    assert "refused" in box.describe()


def test_a_bwrap_that_cannot_create_namespaces_is_detected(tmp_path, workspace):
    binary = fake_bwrap(tmp_path, "bwrap: No permissions to create new namespace")
    found = sandbox_module.probe.__wrapped__(binary)
    assert not found.works
    assert "cannot run here (No permissions to create new namespace)" in found.reason
    box = Sandbox(SandboxMode.ON, False, found)
    ok, output = run("true", workspace, box)
    assert not ok and "cannot run here" in output


def test_off_never_sandboxes(workspace):
    box = Sandbox.decide(SandboxMode.OFF)
    assert not box.active and box.panel_label() == ""


def test_auto_edit_asks_for_shell_unless_it_is_sandboxed():
    registry = default_registry()
    assert registry.needs_approval("run_shell", ApprovalMode.AUTO_EDIT)
    assert not registry.needs_approval("run_shell", ApprovalMode.AUTO_EDIT, sandboxed=True)
    assert registry.needs_approval("run_shell", ApprovalMode.ASK, sandboxed=True)


def test_the_tool_description_tells_the_model_the_truth(tmp_path):
    from agent.config import load_config
    from agent.loop import Agent

    (tmp_path / "home").mkdir()
    config = load_config(tmp_path / "home", demo=True)
    agent = Agent(config, workspace=tmp_path)
    try:
        described = next(t for t in agent.registry.schemas() if t["name"] == "run_shell")
        assert agent.sandbox.describe() in described["description"]
        plain = next(t for t in default_registry().schemas() if t["name"] == "run_shell")
        assert "sandbox" not in plain["description"]
    finally:
        agent.close()


# -- confinement (where bubblewrap runs) ---------------------------------------------------


@pytest.fixture
def box() -> Sandbox:
    return Sandbox(SandboxMode.AUTO, False, REAL)


@needs_bwrap
def test_the_workspace_is_writable(workspace, box):
    ok, output = run("echo made > made.txt && cat made.txt", workspace, box)
    assert ok, output
    assert (workspace / "made.txt").read_text() == "made\n"


@needs_bwrap
def test_a_write_outside_the_workspace_fails(workspace, tmp_path, box):
    ok, output = run("echo x > /etc/hermes-sandbox-probe", workspace, box)
    assert not ok and "Read-only file system" in output
    assert not Path("/etc/hermes-sandbox-probe").exists()
    # Next to the workspace: under /tmp here, so the write lands in the private /tmp only.
    outside = tmp_path / "outside.txt"
    run(f"echo x > {outside}", workspace, box)
    assert not outside.exists()
    ok, _ = run("touch $HOME/.hermes-sandbox-probe", workspace, box)
    assert not ok and not (Path.home() / ".hermes-sandbox-probe").exists()


@needs_bwrap
def test_no_link_in_the_workspace_leads_a_write_outside(workspace, tmp_path, box):
    """A link the workspace holds to a folder outside, or a hard link made to a file
    outside: neither lets a write out (a hard link cannot cross the workspace's mount)."""
    outside = Path(tempfile.mkdtemp(prefix="hermes-outside-", dir="/var/tmp"))
    try:
        (outside / "precious.txt").write_text("precious\n")
        (workspace / "out").symlink_to(outside)
        ok, output = run("echo owned > out/precious.txt", workspace, box)
        assert not ok and "Read-only file system" in output
        ok, output = run(f"ln {outside}/precious.txt hard && echo owned > hard", workspace, box)
        assert not ok, output
        assert (outside / "precious.txt").read_text() == "precious\n"
    finally:
        shutil.rmtree(outside, ignore_errors=True)


@needs_bwrap
def test_git_config_cannot_be_written(workspace, box):
    ok, output = run("echo '[core] fsmonitor = evil' >> .git/config", workspace, box)
    assert not ok and "Read-only file system" in output
    assert (workspace / ".git" / "config").read_text() == "[core]\n"


@needs_bwrap
def test_a_git_folder_behind_a_link_stays_read_only(tmp_path, box):
    ws = tmp_path / "linked"
    (ws / "repo.git" / "hooks").mkdir(parents=True)
    (ws / ".git").symlink_to("repo.git")
    ok, output = run("echo 'rm -rf ~' > .git/hooks/pre-commit", ws, box)
    assert not ok and "Read-only file system" in output
    assert not (ws / "repo.git" / "hooks" / "pre-commit").exists()
    ok, output = run("echo fine > repo.txt", ws, box)
    assert ok, output


@needs_bwrap
def test_tmp_is_private(workspace, box, tmp_path):
    ok, output = run("echo secret > /tmp/hermes-private && cat /tmp/hermes-private", workspace, box)
    assert ok and "secret" in output
    assert not Path("/tmp/hermes-private").exists()


@needs_bwrap
def test_the_network_is_unreachable(workspace, box):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    probe_script = (
        "import socket,sys\n"
        "s=socket.socket(); s.settimeout(2)\n"
        f"sys.exit(0 if s.connect_ex(('127.0.0.1', {port})) == 0 else 7)\n"
    )
    (workspace / "net.py").write_text(probe_script)
    try:
        ok, output = run("python3 net.py", workspace, box)
        assert not ok and "[exit code 7]" in output
        allowed = Sandbox(SandboxMode.AUTO, True, REAL)
        ok, output = run("python3 net.py", workspace, allowed)
        assert ok, output
    finally:
        server.close()


def _socket_dirs() -> list[Path]:
    """Folders outside /tmp this test may make a socket in: /run (as root), a runtime dir."""
    found = []
    for parent in ("/run", "/var/tmp"):
        if os.access(parent, os.W_OK) and not os.path.islink(parent):
            found.append(Path(tempfile.mkdtemp(prefix="hermes-sock-", dir=parent)))
    return found


@needs_bwrap
def test_the_hosts_sockets_cannot_be_reached(workspace, box, monkeypatch):
    """A read-only mount does not stop connect(): a daemon's socket (docker, the session bus,
    an ssh agent) would let a command without network run things outside the sandbox."""
    dirs = _socket_dirs()
    if not dirs:
        pytest.skip("no folder outside /tmp to make a socket in")
    # The runtime folder of the session (where the session bus and agents listen).
    runtime = next((d for d in dirs if not str(d).startswith("/run/")), None)
    if runtime is not None:
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("SSH_AUTH_SOCK", str(dirs[0] / "agent.sock"))
    servers = []
    try:
        for folder in dirs:
            server = socket.socket(socket.AF_UNIX)
            server.bind(str(folder / "agent.sock"))
            server.listen(1)
            servers.append(server)
        tries = "; ".join(
            f"s=socket.socket(socket.AF_UNIX); print(s.connect_ex({str(d / 'agent.sock')!r}))"
            for d in dirs
        )
        (workspace / "sock.py").write_text(f"import os, socket\n{tries}\n")
        (workspace / "env.sh").write_text('echo "ssh=${SSH_AUTH_SOCK:-unset}"\n')
        ok, output = run("python3 sock.py; sh env.sh", workspace, box)
        assert ok, output
        codes = output.splitlines()[: len(dirs)]
        assert all(code != "0" for code in codes), output
        assert "ssh=unset" in output
        # Outside the sandbox the same sockets answer: the test would see a reachable one.
        probe_socket = socket.socket(socket.AF_UNIX)
        assert probe_socket.connect_ex(str(dirs[0] / "agent.sock")) == 0
        probe_socket.close()
    finally:
        for server in servers:
            server.close()
        for folder in dirs:
            shutil.rmtree(folder, ignore_errors=True)


@needs_bwrap
def test_the_process_group_dies_with_the_tool(workspace, box):
    ok, output = run(
        "(sleep 60.3719; echo late > late.txt) & sleep 60.3719", workspace, box, shell_timeout=1.0
    )
    assert not ok and "timed out" in output
    done = subprocess.run(["pgrep", "-f", "sleep 60.3719"], capture_output=True)
    assert done.stdout == b""
    assert not (workspace / "late.txt").exists()


@needs_bwrap
def test_a_created_code_running_file_is_named(workspace, box):
    ok, output = run("echo 'rm -rf ~' > .envrc", workspace, box)
    assert ok
    assert "created .envrc, which can run code on its own" in output


def test_probe_result_is_a_sentence():
    assert isinstance(REAL, Probe)
    assert REAL.works or REAL.reason.endswith(("namespaces", ")")) or "not installed" in REAL.reason


def _needs_the_filter(box: Sandbox) -> None:
    """Skip where this machine or kernel has no seccomp filter; elsewhere the filter must be
    on (a trial run that wrongly fails would otherwise skip these tests, not fail them)."""
    from agent.tools.seccomp import unix_socket_filter

    status = Path("/proc/self/status")
    if unix_socket_filter() is None or "Seccomp:" not in status.read_text():
        pytest.skip("no seccomp filter for this machine or kernel")
    assert box.filters_sockets, "bubblewrap works and seccomp is there, but the filter is off"


def _listening(path: Path) -> socket.socket:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(1)
    return server


@needs_bwrap
def test_no_unix_socket_anywhere_can_be_opened(workspace, box):
    """An ssh `ControlPath` in the home folder, gpg's agent, a socket in the workspace: a
    read-only mount leaves connect() open, so the sandbox closes socket(AF_UNIX) itself."""
    _needs_the_filter(box)
    home = Path(tempfile.mkdtemp(prefix="hermes-home-", dir="/var/tmp"))
    sockets = [home / ".ssh" / "cm-git@host:22", workspace / "daemon.sock"]
    (home / ".ssh").mkdir()
    servers = [_listening(path) for path in sockets]
    try:
        tries = "".join(
            "try:\n"
            f"    socket.socket(socket.AF_UNIX).connect({str(path)!r}); print('reached')\n"
            "except OSError as e:\n"
            "    print(e.errno)\n"
            for path in sockets
        )
        (workspace / "sock.py").write_text(
            f"import socket\n{tries}a, b = socket.socketpair(); a.send(b'x'); print(b.recv(1))\n"
        )
        ok, output = run("python3 sock.py", workspace, box)
        assert ok, output
        assert output.splitlines()[:3] == ["13", "13", "b'x'"], output  # EACCES; pairs work
        opened = Sandbox(SandboxMode.AUTO, False, REAL, unix_sockets=True)
        ok, output = run("python3 sock.py", workspace, opened)
        assert output.splitlines()[:2] == ["reached", "reached"], output
        assert "may be reachable" in opened.describe() and "no Unix socket" in box.describe()
    finally:
        for server in servers:
            server.close()
        shutil.rmtree(home, ignore_errors=True)


@needs_bwrap
def test_io_uring_is_not_available_in_the_sandbox(workspace, box):
    """A ring can open sockets without the socket() call the filter sees."""
    _needs_the_filter(box)
    script = (
        "import ctypes, errno\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "libc.syscall(425, 0, None); print(errno.errorcode[ctypes.get_errno()])\n"
    )
    (workspace / "ring.py").write_text(script)
    outside = subprocess.run(["python3", "ring.py"], cwd=workspace, capture_output=True, text=True)
    if outside.stdout.strip() in ("ENOSYS", "EPERM"):
        pytest.skip("io_uring is off on this machine already")
    ok, output = run("python3 ring.py", workspace, box)
    assert ok and output.splitlines()[0] == "ENOSYS", output


@needs_bwrap
def test_a_nested_repositorys_git_is_read_only_too(workspace, box):
    nested = workspace / "vendor" / "lib" / ".git"
    (nested / "hooks").mkdir(parents=True)
    (nested / "config").write_text("[core]\n")
    ok, output = run("echo '[core] fsmonitor = evil' >> vendor/lib/.git/config", workspace, box)
    assert not ok and "Read-only file system" in output
    ok, output = run("touch vendor/lib/.git/hooks/post-checkout", workspace, box)
    assert not ok and "Read-only file system" in output
    assert (nested / "config").read_text() == "[core]\n"
    ok, output = run("echo fine > vendor/lib/code.py", workspace, box)
    assert ok, output


@needs_bwrap
def test_a_command_that_plants_a_git_folder_deep_down_is_named(workspace, box):
    """git would find `src/app/.git` first when the user runs it in src/app: named for review."""
    (workspace / "src" / "app").mkdir(parents=True)
    ok, output = run("mkdir -p src/app/.git && echo '[core]' > src/app/.git/config", workspace, box)
    assert ok, output
    assert "[the command created src/app/.git, which can run code on its own" in output


def test_the_guarded_search_reaches_deep_skips_packages_and_follows_no_link(tmp_path):
    from agent.tools.sandbox import guarded_paths

    ws = tmp_path / "ws"
    for rel in ("a/b/c/d/e/.git", "node_modules/pkg/.git", "x/.vscode", ".git"):
        (ws / rel).mkdir(parents=True)
    (ws / "a" / ".envrc").write_text("")
    outside = tmp_path / "outside"
    (outside / ".git").mkdir(parents=True)
    (ws / "link").symlink_to(outside)
    (ws / ".git" / "hooks").mkdir()  # inside a guarded folder: not searched
    (ws / ".git" / "hooks" / ".envrc").write_text("")
    assert guarded_paths(ws) == {"a/b/c/d/e/.git", "x/.vscode", ".git", "a/.envrc"}


def test_the_filter_is_built_for_the_machines_we_know(monkeypatch):
    from agent.tools.seccomp import unix_socket_filter

    for machine in ("x86_64", "aarch64", "AMD64", "arm64"):
        program = unix_socket_filter(machine)
        assert program and len(program) % 8 == 0 and len(program) // 8 < 64
    assert unix_socket_filter("riscv64") is None
    monkeypatch.setattr("agent.tools.sandbox.unix_socket_filter", lambda: None)
    from agent.tools.sandbox import socket_filter

    with socket_filter() as fd:
        assert fd is None


def test_unix_sockets_open_only_when_the_config_says_so(tmp_path):
    from agent.config import ConfigError, load_config

    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("tools: {shell: {unix_sockets: true, network: true}}\n")
    config = load_config(home, demo=True)
    assert config.shell.unix_sockets and config.shell.network
    box = Sandbox(SandboxMode.AUTO, True, Probe(True, "/usr/bin/bwrap", filters=True), True)
    assert box.panel_label() == "bwrap + net + sockets" and not box.filters_sockets
    assert Sandbox(SandboxMode.AUTO, False, box.state).filters_sockets
    (home / "config.yaml").write_text("tools: {shell: {unix_socket: true}}\n")
    with pytest.raises(ConfigError, match="unix_socket"):
        load_config(home, demo=True)
