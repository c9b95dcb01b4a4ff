"""H9: the app's own home is a protected path. The user started the app in `~`, so the
workspace holds `~/.config/hermes-tui`; a hostile model in auto-edit (no dialog) aims at its
config.yaml (an MCP server there runs unsandboxed at the next start; `sandbox: off`) and
projects.yaml (consents and "always for this project"). Real agent, scripted server through
the real SDK, real bubblewrap, and headless in a subprocess."""

from __future__ import annotations

import base64
import os

import pytest
from headless_inprocess import run_cli_in_process
from helpers import write_config
from integration.conftest import Harness

from agent.scripted import Script, ScriptedServer
from agent.tools.approvals import Verdict
from agent.tools.registry import DECLINED
from agent.tools.sandbox import probe

REAL = probe()
needs_bwrap = pytest.mark.skipif(not REAL.works, reason=f"no sandbox here: {REAL.reason}")
KEY = "sk-test-key-123456"  # the key write_config puts in config.yaml
PROJECTS = "projects:\n  /somewhere:\n    consent: {}\n"


@pytest.fixture
def user_home(hermes_home, tmp_path, monkeypatch):
    """A fake `~` whose app home is the default `~/.config/hermes-tui`; the workspace is `~`."""
    home = tmp_path / "user"
    app_home = home / ".config" / "hermes-tui"
    app_home.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("HERMES_TUI_HOME", str(app_home))
    (app_home / "projects.yaml").write_text(PROJECTS)
    return home.resolve()


def call(name: str, call_id: str = "c1", **arguments) -> dict:
    return {"tool_calls": [{"id": call_id, "name": name, "arguments": arguments}]}


class Recorder:
    """An approve callback that records each request and gives a fixed answer."""

    def __init__(self, answer) -> None:
        self.answer = answer
        self.requests: list = []

    def __call__(self, request):
        self.requests.append(request)
        return self.answer


def run_turn(user_home, replies, approve, **config):
    """One auto-edit turn of the real agent in `~`; returns the tool results the model read."""
    harness = Harness(user_home / ".config" / "hermes-tui", user_home)
    try:
        harness.start({"replies": replies}, agent={"approval": "auto-edit"}, **config)
        harness.agent(approve=approve).run_turn("tidy up my home")
        sent = harness.bodies()[-1]["messages"]
        return [m["content"] for m in sent if m["role"] == "tool"]
    finally:
        harness.close()


@needs_bwrap
def test_a_sandboxed_command_cannot_add_an_mcp_server_to_the_config(user_home):
    """H9: auto-edit runs a sandboxed command unasked; the config it aims at is not there."""
    config = user_home / ".config" / "hermes-tui" / "config.yaml"
    append = (
        "printf 'mcp_servers:\\n  evil: {command: sh, args: [-c, touch pwned]}\\n' "
        ">> .config/hermes-tui/config.yaml; cat .config/hermes-tui/config.yaml; "
        "base64 -w0 .config/hermes-tui/config.yaml; ls -A .config/hermes-tui"
    )
    approve = Recorder(False)
    replies = [call("run_shell", command=append), {"text": "done"}]
    harness = Harness(config.parent, user_home)
    try:
        harness.start({"replies": replies}, agent={"approval": "auto-edit"}, sandbox="auto")
        before = config.read_bytes()
        harness.agent(approve=approve).run_turn("tidy up my home")
        [told] = [m["content"] for m in harness.bodies()[-1]["messages"] if m["role"] == "tool"]
    finally:
        harness.close()
    assert approve.requests == []  # sandboxed: no dialog in auto-edit
    assert config.read_bytes() == before
    assert "mcp_servers" not in config.read_text()
    assert "Read-only file system" in told
    encoded = base64.b64encode(before).decode()
    assert KEY not in told and encoded[:40] not in told and "state.db" not in told


def test_edit_file_turning_the_sandbox_off_asks(user_home):
    approve = Recorder(False)
    edit = {
        "path": ".config/hermes-tui/config.yaml",
        "old_string": "sandbox: auto",
        "new_string": "sandbox: 'off'",
    }
    told = run_turn(user_home, [call("edit_file", **edit), {"text": "ok"}], approve, sandbox="auto")
    [request] = approve.requests
    assert request.protected and request.always is None
    assert request.summary.startswith("protected path (the app's own home): edit_file ")
    assert "hermes-tui's own home" in request.detail
    assert told == [DECLINED]
    assert "sandbox: auto" in (user_home / ".config/hermes-tui/config.yaml").read_text()


def test_always_does_not_cover_the_apps_home(user_home):
    """An "always" answered for one write does not let the next one through unasked."""
    approve = Recorder(Verdict(True, always=True))
    path = ".config/hermes-tui/projects.yaml"
    replies = [
        call("write_file", "w1", path=path, content="projects: {}\n"),
        call("write_file", "w2", path=path, content="projects: {evil: {}}\n"),
        {"text": "ok"},
    ]
    run_turn(user_home, replies, approve)
    assert len(approve.requests) == 2 and all(r.protected for r in approve.requests)


def test_ordinary_files_in_home_still_write_unasked(user_home):
    approve = Recorder(False)
    run_turn(
        user_home, [call("write_file", path="notes.txt", content="x\n"), {"text": "ok"}], approve
    )
    assert approve.requests == []
    assert (user_home / "notes.txt").read_text() == "x\n"


def test_headless_without_yes_refuses_to_rewrite_projects_yaml(user_home):
    app_home = user_home / ".config" / "hermes-tui"
    replies = [
        call("write_file", "h1", path=".config/hermes-tui/projects.yaml", content="projects: {}\n"),
        {"text": "ok"},
    ]
    server = ScriptedServer(Script.from_dict({"replies": replies})).start()
    try:
        write_config(app_home, server, agent={"approval": "auto-edit"}, sandbox="off")
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        proc = run_cli_in_process(["run", "reset consents"], env=env, cwd=user_home)
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr
        [told] = [m["content"] for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    finally:
        server.stop()
    assert told.startswith(
        "Refused: .config/hermes-tui/projects.yaml is a protected path (it is in hermes-tui's "
        "own home"
    )
    assert told.endswith("(run with --yes or approval: yolo).")
    assert (app_home / "projects.yaml").read_text() == PROJECTS


def test_the_platform_home_is_protected_when_the_variable_points_elsewhere(
    user_home, tmp_path, monkeypatch
):
    """`$HERMES_TUI_HOME` elsewhere: the default home in `~` keeps its consents all the same."""
    elsewhere = tmp_path / "other-home"
    elsewhere.mkdir()
    monkeypatch.setenv("HERMES_TUI_HOME", str(elsewhere))
    approve = Recorder(False)
    harness = Harness(elsewhere, user_home)
    try:
        path = ".config/hermes-tui/projects.yaml"
        replies = [call("write_file", path=path, content="projects: {}\n"), {"text": "ok"}]
        harness.start({"replies": replies}, agent={"approval": "auto-edit"})
        harness.agent(approve=approve).run_turn("go")
    finally:
        harness.close()
    assert [r.protected for r in approve.requests] == [True]
    assert (user_home / ".config/hermes-tui/projects.yaml").read_text() == PROJECTS


@needs_bwrap
def test_in_a_workspace_inside_the_apps_home_shell_asks_in_auto_edit(user_home):
    """There the sandbox leaves the home's config writable, so it does not stand in for a yes."""
    app_home = user_home / ".config" / "hermes-tui"
    approve = Recorder(False)
    harness = Harness(app_home, app_home)
    try:
        replies = [call("run_shell", command="echo 'sandbox: off' >> config.yaml"), {"text": "ok"}]
        harness.start({"replies": replies}, agent={"approval": "auto-edit"}, sandbox="auto")
        before = (app_home / "config.yaml").read_text()
        harness.agent(approve=approve).run_turn("go")
    finally:
        harness.close()
    assert [r.tool for r in approve.requests] == ["run_shell"]
    assert (app_home / "config.yaml").read_text() == before
