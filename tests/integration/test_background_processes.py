"""Background shell processes through the model's tool calls (G2): a server started with
`run_shell(background: true)` outlives the call, is listed with its port, read with
shell_output, stopped with shell_stop, capped in number, and ended with the app."""

from __future__ import annotations

import os
import re
import signal
import threading
import urllib.request
from pathlib import Path

import pytest
from helpers import run_headless, write_config
from waits import wait_until

from agent import background as background_module
from agent import events as ev
from agent.background import BackgroundTable
from agent.process_groups import group_alive
from agent.scripted import Script

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")

SERVER = "python3 -m http.server 0 --bind 127.0.0.1"


@pytest.fixture
def table(monkeypatch):
    """A fresh background table for this test (ids from bg1); whatever it still runs at the
    end is killed, so no test leaves a process behind."""
    fresh = BackgroundTable(grace=0.5)
    monkeypatch.setattr(background_module, "BACKGROUND", fresh)
    yield fresh
    fresh.stop_all(grace=0.2)


def call(name: str, call_id: str = "c1", **arguments) -> dict:
    return {"tool_calls": [{"id": call_id, "name": name, "arguments": arguments}]}


def background(command: str, call_id: str = "c1") -> dict:
    return call("run_shell", call_id, command=command, background=True)


def results(harness) -> list[str]:
    """The tool results the agent produced, in order."""
    return [e.output for e in harness.events if isinstance(e, ev.ToolFinished)]


def turn_on_a_thread(agent, text: str) -> None:
    """Run a turn on a thread that then ends, as the TUI's workers do: a background process
    must outlive the thread that started it (bubblewrap's parent-death signal follows the
    starting thread)."""
    worker = threading.Thread(target=agent.run_turn, args=(text,))
    worker.start()
    worker.join(60)
    assert not worker.is_alive()


def served_port(text: str) -> int:
    found = re.search(r"port (\d+)", text)
    assert found, text
    return int(found.group(1))


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_g2_a_background_server_is_listed_read_and_stopped(harness, table, wire):
    """G2: started by the model, the server outlives its call and the turn's thread, is
    listed with the port it listens on, what it logs is read with shell_output, and
    shell_stop ends its process group."""
    replies = [
        background(SERVER),
        {"text": "started"},
        call("shell_output", id="bg1"),
        {"text": "read"},
        call("shell_stop", id="bg1"),
        {"text": "stopped"},
    ]
    # The host's network, so the test can reach the server as the user's browser would.
    agent = harness.start({"replies": replies}, wire=wire, tools={"shell": {"network": True}})
    turn_on_a_thread(agent, "start the server")
    (started,) = results(harness)
    assert "started in the background as bg1" in started
    (entry,) = table.processes()
    port = served_port(started)
    assert entry.running
    assert wait_until(entry.ports, what="the listening port") == [port]
    assert f"listening on port {port}" in started
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/README.md", timeout=10) as page:
        assert page.read() == b"# sample\n"

    turn_on_a_thread(agent, "what did it log?")
    read = results(harness)[1]
    assert read.startswith("[bg1 running for ")
    assert "GET /README.md HTTP/1.1" in read
    assert "Serving HTTP" not in read  # only what came since the last read

    turn_on_a_thread(agent, "stop it")
    assert results(harness)[2].startswith("Stopped bg1 (python3 -m http.server")
    assert not group_alive(entry.pgid)
    assert table.processes()[0].state() == "stopped"


def test_g2_the_number_of_background_processes_is_capped(harness, table):
    """G2: past the cap a further background command is refused in one sentence, before
    anything is asked or started."""
    table.limit = 2
    ready = "echo ready; exec sleep 60"
    replies = [
        {
            "tool_calls": [
                background(ready, "c1")["tool_calls"][0],
                background(ready, "c2")["tool_calls"][0],
                background(ready, "c3")["tool_calls"][0],
            ]
        },
        {"text": "done"},
    ]
    agent = harness.start({"replies": replies})
    agent.run_turn("start three")
    first, second, third = results(harness)
    assert "as bg1" in first and "as bg2" in second
    assert third == (
        "Refused: 2 background processes already run (bg1, bg2), the most at once; stop one "
        "with shell_stop first."
    )
    assert len(table.processes()) == 2


def test_g2_a_process_that_ignores_sigterm_is_killed(harness, table):
    """G2: shell_stop ends a group that ignores SIGTERM with SIGKILL after the grace
    (unconfined: under bubblewrap the sandbox's own end takes it down at once)."""
    stubborn = "trap '' TERM; echo ready; while :; do sleep 0.1; done"
    replies = [background(stubborn), call("shell_stop", "c2", id="bg1"), {"text": "done"}]
    agent = harness.start({"replies": replies}, sandbox="off")
    agent.run_turn("start and stop it")
    started, stopped = results(harness)
    (entry,) = table.processes()
    assert "ready" in started
    assert "so it was killed (SIGKILL)" in stopped
    assert not group_alive(entry.pgid)


def test_g2_a_sandboxed_server_lists_its_port_on_its_own_loopback(harness, table):
    """G2: without the network the sandbox's server listens on a loopback of its own: its
    port is still listed (read in its network namespace) and said to be private."""
    agent = harness.start({"replies": [background(SERVER), {"text": "ok"}]})
    if not agent.sandbox.active:
        pytest.skip("bubblewrap does not run here")
    agent.run_turn("start it")
    (started,) = results(harness)
    port = served_port(started)
    assert f"listening on port {port} (on the sandbox's own loopback" in started
    assert "its ports are reachable only from inside this command" in started


def marked_processes(marker: str) -> list[int]:
    """The live processes whose command line holds `marker`."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            state = Path(f"/proc/{name}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != b"Z":
            found.append(int(name))
    return found


def test_g2_headless_exit_stops_the_background_server_and_says_so(hermes_home, tmp_path, servers):
    """G2: `hermes-tui run` ends the background server it started when it exits, and says
    which it stopped."""
    workspace = tmp_path / "project"
    workspace.mkdir()
    marker = f"{workspace}/served"  # only this test's server has it on its command line
    Path(marker).mkdir()
    command = f"{SERVER} --directory {marker}"
    server = servers.start(Script.from_dict({"replies": [background(command), {"text": "up"}]}))
    write_config(hermes_home, server)
    try:
        done = run_headless(hermes_home, workspace, "start the server")
        assert done.returncode == 0, done.stderr
        assert "Stopped 1 background process: bg1 (python3 -m http.server 0" in done.stderr
        wait_until(lambda: not marked_processes(marker), timeout=5, what="the server gone")
    finally:
        for pid in marked_processes(marker):
            os.kill(pid, signal.SIGKILL)
