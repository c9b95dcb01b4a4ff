"""The shell sandbox's decisions in-process (X3): which mode probes, whether the Unix-socket
filter is on, which guarded paths a command may not write, and where the walk stops.

These run where bubblewrap does not too (the bubblewrap arguments are checked as a list), so
a change to the decisions fails here rather than only in the confinement tests, which skip
on a machine without user namespaces (tests/security/test_hostile_sandbox.py).
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path

import pytest

from agent.kinds import SandboxMode
from agent.tools import sandbox as sandbox_module
from agent.tools.hiding import Hiding
from agent.tools.sandbox import (
    SCAN_ENTRIES,
    Probe,
    Sandbox,
    _filter_works,
    guarded_paths,
    probe,
    trial_command,
)
from agent.tools.seccomp import unix_socket_filter

REAL = probe()
FAKE = Probe(True, "/usr/bin/bwrap", filters=True)
"""A working bubblewrap as far as `wrap` is concerned: it only builds the argument list."""


def _kernel_filters() -> bool:
    """Whether this kernel takes seccomp filters (the `Seccomp:` field of /proc/self/status)."""
    try:
        return "Seccomp:" in Path("/proc/self/status").read_text()
    except OSError:
        return False


# -- Sandbox.decide: `auto` and `on` probe, `off` never does ------------------------------


@pytest.mark.parametrize("mode", [SandboxMode.AUTO, SandboxMode.ON])
def test_auto_and_on_take_the_probe_of_this_machine(mode):
    """X3: `auto` and `on` use what the trial run found, never the `off` sentence."""
    box = Sandbox.decide(mode, network=True, unix_sockets=True)
    assert box.mode is mode and box.state == REAL
    assert box.network and box.unix_sockets and box.hiding == Hiding()
    assert "sandbox is off" not in box.state.reason
    assert box.active == REAL.works


def test_off_never_probes_and_keeps_what_it_was_given():
    hiding = Hiding(hide=("~/notes",))
    box = Sandbox.decide(SandboxMode.OFF, network=True, unix_sockets=True, hiding=hiding)
    assert box.state == Probe(False, None, "the sandbox is off (`sandbox: off`)")
    assert box.network and box.unix_sockets and box.hiding is hiding
    assert not box.active and box.refusal is None and box.describe().startswith("Commands run")


@pytest.mark.skipif(not REAL.works, reason=f"no sandbox here: {REAL.reason}")
def test_auto_confines_commands_where_bubblewrap_works(tmp_path):
    """X3: with `sandbox: auto` and a working bubblewrap, every command is wrapped."""
    hiding = Hiding(hide=("~/notes",))
    box = Sandbox.decide(SandboxMode.AUTO, hiding=hiding)
    assert box.active and box.confines(tmp_path) and box.hiding is hiding
    argv = box.wrap(["sh", "-c", "true"], tmp_path, guarded=set())
    assert argv[0] == REAL.binary and "--unshare-net" in argv
    assert argv[-6:] == ["--chdir", str(tmp_path), "--", "sh", "-c", "true"]
    assert box.panel_label() == "bwrap" and box.describe().startswith("Commands run in a sandbox")


def test_on_without_a_working_bubblewrap_refuses_and_says_why(monkeypatch):
    """X3: `sandbox: on` with bubblewrap missing refuses every command with the reason."""
    missing = "/nonexistent/bwrap"
    monkeypatch.setattr(sandbox_module, "probe", lambda: probe.__wrapped__(missing))
    box = Sandbox.decide(SandboxMode.ON)
    assert not box.active and box.state.binary == missing
    assert box.refusal is not None
    assert box.refusal.startswith("Refused: `sandbox: on` runs shell commands only under")
    assert f"bubblewrap could not start ([Errno 2] No such file or directory: '{missing}')" in (
        box.refusal
    )
    assert box.panel_label() == "refusing shell"
    auto = Sandbox.decide(SandboxMode.AUTO)
    assert auto.refusal is None and auto.panel_label() == "unconfined"


# -- the Unix-socket filter's trial run ----------------------------------------------------


def test_the_filter_counts_as_working_only_when_its_trial_run_succeeds():
    """X3: a trial that fails must turn the filter off, one that succeeds keep it on."""
    assert _filter_works(["true", "last"])
    assert not _filter_works(["false", "last"])
    assert not _filter_works(["/nonexistent/bwrap", "last"])


def test_the_trial_gets_the_filter_before_its_command():
    """The filter's descriptor reaches the trial, named after `--seccomp`, before the last word."""
    script = '[ "$0" = --seccomp ] && [ "$2" = last ] && [ "$(wc -c < /dev/fd/"$1")" -gt 0 ]'
    assert _filter_works(["sh", "-c", script, "last"])


def test_the_trial_says_nothing_on_the_terminal(capfd):
    """A failing trial's complaint is read, not printed over the full-screen app."""
    assert not _filter_works(["sh", "-c", "echo said; echo complained >&2; exit 1", "last"])
    assert capfd.readouterr() == ("", "")


def test_no_filter_program_means_no_filter(monkeypatch):
    monkeypatch.setattr(sandbox_module, "unix_socket_filter", lambda: None)
    assert not _filter_works(["true", "last"])


def test_a_trial_that_hangs_means_no_filter(monkeypatch):
    monkeypatch.setattr(sandbox_module, "PROBE_TIMEOUT", 0.2)
    assert not _filter_works(["sh", "-c", "exec sleep 30", "last"])


@pytest.mark.skipif(not REAL.works, reason=f"no sandbox here: {REAL.reason}")
def test_where_bubblewrap_and_seccomp_work_the_filter_is_on():
    """X3: on a kernel with seccomp and a known machine the filter must be on (the tests of
    what it blocks skip otherwise, so a broken trial would go unnoticed)."""
    if unix_socket_filter() is None or not _kernel_filters():
        pytest.skip("no seccomp filter for this machine or kernel")
    assert _filter_works(trial_command(REAL.binary))
    assert probe.__wrapped__(REAL.binary) == REAL and REAL.filters


# -- wrap: every guarded path read-only, whatever comes before it --------------------------


def _read_only(argv: list[str]) -> list[str]:
    """The paths `wrap` mounts read-only over the workspace's bind."""
    return [argv[i + 1] for i, arg in enumerate(argv) if arg == "--ro-bind-try"]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    for rel in (".git", ".vscode", "repo.git", "sub/.git"):
        (root / rel).mkdir(parents=True)
    (root / ".envrc").write_text("")
    return root


def test_a_skipped_link_leaves_every_later_guarded_path_read_only(ws, tmp_path):
    """X3: a guarded link that leads outside, to the workspace itself or nowhere needs no
    mount of its own; the guarded paths sorted after it still get theirs."""
    (tmp_path / "elsewhere").mkdir()
    (ws / ".devcontainer").symlink_to(tmp_path / "elsewhere")  # outside: read-only already
    (ws / ".dir-locals.el").symlink_to(ws)  # the workspace itself: not made read-only
    (ws / ".exrc").symlink_to(ws / "gone")  # leads nowhere
    (ws / ".idea").symlink_to("repo.git")  # inside: read-only where it leads
    box = Sandbox(SandboxMode.AUTO, False, FAKE)
    guarded = {".devcontainer", ".dir-locals.el", ".envrc", ".exrc", ".git", ".idea", ".vscode"}
    argv = box.wrap(["true"], ws, guarded=guarded)
    assert _read_only(argv) == [str(ws / p) for p in (".envrc", ".git", "repo.git", ".vscode")]
    # Without `guarded`, wrap walks the workspace itself (a nested `.git` included).
    walked = _read_only(box.wrap(["true"], ws))
    assert walked == [str(ws / p) for p in (".envrc", ".git", "repo.git", ".vscode", "sub/.git")]


def test_wrap_closes_the_network_and_passes_the_filter(ws):
    argv = Sandbox(SandboxMode.AUTO, False, FAKE).wrap(["true"], ws, guarded=set(), seccomp_fd=7)
    assert "--unshare-net" in argv and argv[argv.index("--seccomp") + 1] == "7"
    opened = Sandbox(SandboxMode.AUTO, True, FAKE).wrap(["true"], ws, guarded=set())
    assert "--unshare-net" not in opened and "--seccomp" not in opened


# -- guarded_paths: an unreadable folder and the entry limit -------------------------------


def _deep_chain(root: Path, name: str, length: int) -> int:
    """Folders `root/name/name/...` until the path is longer than the system allows (made
    relative to open folders: the full path cannot be named); returns the depth reached."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    depth, total = 0, len(str(root))
    try:
        while total < os.pathconf(root, "PC_PATH_MAX"):
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd, depth, total = inner, depth + 1, total + length + 1
    finally:
        os.close(fd)
    return depth


def test_a_folder_the_walk_cannot_read_does_not_end_it(tmp_path):
    """X3: a folder that cannot be listed (here, as even root meets it: a path too long to
    name) is skipped, and a nested `.git` deeper than it is still found and guarded."""
    ws = tmp_path / "ws"
    ws.mkdir()
    depth = _deep_chain(ws, "a" * 200, 200)
    nested = ws / "/".join(["b"] * (depth + 1)) / ".git"
    nested.mkdir(parents=True)
    found = guarded_paths(ws)
    assert found == {str(nested.relative_to(ws))}


def test_the_walk_reads_at_most_its_limit_nearest_first(tmp_path):
    """X3: the walk stops after `limit` entries; what is nearer is found first."""
    ws = tmp_path / "ws"
    (ws / "a" / ".git").mkdir(parents=True)
    (ws / ".envrc").write_text("")
    assert guarded_paths(ws, limit=3) == {".envrc", "a/.git"}  # .envrc, a, a/.git
    assert guarded_paths(ws, limit=2) == {".envrc"}
    assert guarded_paths(ws, limit=0) == set()


def test_the_walk_stops_inside_a_folder_at_its_limit(tmp_path):
    """X3: the limit counts entries, not folders: it ends a listing midway."""
    ws = tmp_path / "ws"
    (ws / "a" / ".git").mkdir(parents=True)
    for index in range(10):
        (ws / "a" / f"f{index}").write_text("")
    before = os.listdir(ws / "a").index(".git")  # the order the walk reads them in
    assert guarded_paths(ws, limit=1 + before) == set()  # `a`, then what precedes `.git`
    assert guarded_paths(ws, limit=2 + before) == {"a/.git"}


def test_the_walk_reads_twenty_thousand_entries_unless_told_otherwise():
    """X3: the default limit (the tree that reaches it is the slow test below)."""
    assert SCAN_ENTRIES == 20_000
    assert inspect.signature(guarded_paths).parameters["limit"].default == SCAN_ENTRIES


@pytest.mark.slow
def test_the_default_limit_is_twenty_thousand_entries(tmp_path):
    """X3: a workspace of SCAN_ENTRIES entries is read whole, one more hides what is below
    (slow: 20,000 files take seconds to make on a busy machine)."""
    ws = tmp_path / "ws"
    (ws / "sub" / ".git").mkdir(parents=True)
    fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for index in range(SCAN_ENTRIES - 2):  # with `sub` and `sub/.git`: SCAN_ENTRIES
            os.close(os.open(f"f{index}", os.O_CREAT | os.O_WRONLY, dir_fd=fd))
        assert guarded_paths(ws) == {"sub/.git"}
        os.close(os.open("one-more", os.O_CREAT | os.O_WRONLY, dir_fd=fd))
    finally:
        os.close(fd)
    assert guarded_paths(ws) == set()


# -- what the model and the status panel are told ------------------------------------------


def test_the_tool_description_says_exactly_what_holds():
    """X3: the run_shell description is the truth about the network and the host's sockets."""
    confined = (
        "Commands run in a sandbox: the filesystem is read-only except the workspace and a "
        "private /tmp, every .git in the workspace is read-only, the app's own home and the "
        "user's credential folders (~/.ssh, ~/.aws, ...) are empty, and "
    )
    closed = Sandbox(SandboxMode.AUTO, False, FAKE)
    assert closed.describe() == confined + (
        "no Unix socket can be opened, so no host service (docker, the session bus, ssh and "
        "gpg agents) can be reached. There is no network access (only a private loopback)."
    )
    opened = Sandbox(SandboxMode.ON, True, FAKE, unix_sockets=True)
    assert opened.describe() == confined + (
        "host services listening on Unix sockets outside /run may be reachable. "
        "The network is available."
    )
    missing = Probe(False, None, "bubblewrap is not installed")
    assert Sandbox(SandboxMode.ON, False, missing).describe() == (
        "Shell commands are refused: the required sandbox is not available."
    )
    assert Sandbox(SandboxMode.AUTO, False, missing).describe() == (
        "Commands run unconfined, with the user's permissions."
    )


@pytest.mark.parametrize(
    ("mode", "state", "network", "sockets", "label"),
    [
        (SandboxMode.AUTO, FAKE, False, False, "bwrap"),
        (SandboxMode.AUTO, FAKE, True, False, "bwrap + net"),
        (SandboxMode.ON, FAKE, False, True, "bwrap + sockets"),
        (SandboxMode.ON, FAKE, True, True, "bwrap + net + sockets"),
        (SandboxMode.OFF, FAKE, True, True, ""),
        (SandboxMode.ON, Probe(False, None, "no"), False, False, "refusing shell"),
        (SandboxMode.AUTO, Probe(False, None, "no"), False, False, "unconfined"),
    ],
)
def test_the_panel_label_names_what_is_open(mode, state, network, sockets, label):
    assert Sandbox(mode, network, state, sockets).panel_label() == label


def test_the_hidden_places_are_told_only_when_commands_are_confined(tmp_path):
    """H9: the status panel counts what commands do not see; nothing when they run free."""
    hiding = Hiding((tmp_path / "app",), hide=("~/notes",))
    box = Sandbox(SandboxMode.AUTO, False, FAKE, hiding=hiding)
    places = hiding.places(Path.home())
    assert box.hidden_places() == places and places[-1] == "~/notes"
    assert box.hidden_label() == f"home + {len(places)} credential places hidden"
    for free in (Sandbox(SandboxMode.OFF, False, FAKE, hiding=hiding),
                 Sandbox(SandboxMode.AUTO, False, Probe(False), hiding=hiding)):  # fmt: skip
        assert free.hidden_places() == () and free.hidden_label() == ""


def test_a_workspace_inside_the_apps_home_is_not_confined(tmp_path):
    """H9: there commands see and write the app's home, so they do not count as confined."""
    app = tmp_path / "app"
    box = Sandbox(SandboxMode.AUTO, False, FAKE, hiding=Hiding((app,)))
    assert not box.confines(app) and not box.confines(app / "proj")
    assert box.confines(tmp_path / "proj") and box.confines(tmp_path)
    assert not Sandbox(SandboxMode.OFF, False, FAKE).confines(tmp_path)


def test_a_workspace_named_through_a_link_keeps_its_guarded_paths(tmp_path):
    """X3: `.git` of a workspace reached through a link is mounted read-only as named."""
    real = tmp_path / "real"
    (real / ".git").mkdir(parents=True)
    linked = tmp_path / "linked"
    linked.symlink_to(real)
    argv = Sandbox(SandboxMode.AUTO, False, FAKE).wrap(["true"], linked)
    assert _read_only(argv) == [str(linked / ".git")]


# -- the host's sockets: empty folders, the resolver brought back with the network ---------


def _after_tmp(argv: list[str]) -> list[str]:
    """The arguments after the private /tmp: the socket folders come first there."""
    return argv[argv.index("/tmp") + 1 :]


@pytest.fixture
def sockets(tmp_path: Path, monkeypatch) -> Path:
    """A socket folder of the host's (and a link to it, which is not one), a runtime folder,
    and the resolver's configuration living in the socket folder (as systemd-resolved's)."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "resolv.conf").write_text("nameserver 127.0.0.53\n")
    (tmp_path / "var-run").symlink_to(run)
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "resolv.conf").symlink_to(run / "resolv.conf")
    (tmp_path / "runtime").mkdir()
    folders = (str(run), str(tmp_path / "var-run"), str(tmp_path / "missing"))
    monkeypatch.setattr(sandbox_module, "SOCKET_FOLDERS", folders)
    monkeypatch.setattr(sandbox_module, "RESOLVER", str(tmp_path / "etc" / "resolv.conf"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "runtime"))
    return tmp_path


def test_the_hosts_socket_folders_are_empty_and_dns_stays_with_the_network(sockets):
    """X3: no daemon's socket is reachable; with the network on, the resolver still is."""
    run, runtime = str(sockets / "run"), str(sockets / "runtime")
    resolver = str(sockets / "run" / "resolv.conf")
    closed = Sandbox(SandboxMode.AUTO, False, FAKE).wrap(["true"], sockets / "ws", guarded=set())
    opened = Sandbox(SandboxMode.AUTO, True, FAKE).wrap(["true"], sockets / "ws", guarded=set())
    hidden = ["--tmpfs", run, "--tmpfs", runtime]
    assert _after_tmp(closed)[:5] == [*hidden, "--bind"]
    assert _after_tmp(opened)[:8] == [*hidden, "--ro-bind-try", resolver, resolver, "--bind"]


@pytest.mark.parametrize("runtime", ["relative/runtime", "missing", "/run/", None])
def test_a_runtime_folder_is_hidden_only_when_it_is_a_folder_outside_run(
    sockets, monkeypatch, runtime
):
    """Under /run it is hidden with /run already; a relative or missing one names nothing."""
    if runtime == "/run/" and not os.path.isdir("/run"):
        pytest.skip("no /run here")
    if runtime is None:
        monkeypatch.delenv("XDG_RUNTIME_DIR")
    else:
        named = str(sockets / "x") if runtime == "missing" else runtime
        monkeypatch.setenv("XDG_RUNTIME_DIR", named)
    argv = Sandbox(SandboxMode.AUTO, False, FAKE).wrap(["true"], sockets / "ws", guarded=set())
    assert _after_tmp(argv)[:3] == ["--tmpfs", str(sockets / "run"), "--bind"]
