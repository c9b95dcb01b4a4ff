"""E1: `hermes-tui acp` driven as a subprocess through the ACP SDK's client side, against the
scripted server over real HTTP, on a real SQLite store: a prompt with a tool call, its diff
and a permission request; reasoning shown as thoughts and never in a later request (R1); a
prompt queued during a turn (T1); a cancel mid-stream (T6); a load of the stored session,
which `hermes-tui sessions list` lists (one store).

One agent process serves every check of the first test (each start costs seconds here).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import write_config
from mcp_servers import stdio_entry
from waits import wait_until

from agent.scripted import Script

acp = pytest.importorskip("acp")
from acp import PROTOCOL_VERSION, text_block  # noqa: E402
from acp.schema import (  # noqa: E402
    AllowedOutcome,
    ClientCapabilities,
    Implementation,
    McpServerStdio,
    RequestPermissionResponse,
)

STARTED = 60.0
"""Bound on one request to the agent process (a loaded machine starts Python slowly)."""


class RecordingClient:
    """An ACP client that keeps every update and answers permission asks with `pick`."""

    def __init__(self, pick: str = "allow-once") -> None:
        self.updates: list[tuple[str, object]] = []
        self.asks: list[object] = []
        self.pick = pick
        self.changed = asyncio.Event()

    async def request_permission(self, options, session_id, tool_call, **_):
        self.asks.append((tool_call, options))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=self.pick)
        )

    async def session_update(self, session_id, update, **_):
        self.updates.append((session_id, update))
        self.changed.set()

    def kinds(self, session_id: str | None = None) -> list[str]:
        return [u.session_update for s, u in self.updates if session_id in (None, s)]

    def text(self, kind: str, session_id: str | None = None) -> str:
        return "".join(
            u.content.text
            for s, u in self.updates
            if u.session_update == kind and session_id in (None, s)
        )

    async def until(self, predicate, timeout: float = STARTED) -> None:
        """Wait (bounded) until `predicate()` holds, woken by each update."""

        async def waiting():
            while not predicate():
                self.changed.clear()
                await self.changed.wait()

        await asyncio.wait_for(waiting(), timeout)


QUEUED = 30.0
"""Bound on the agent taking in a prompt sent while its turn waits at a gate."""


def _log_text(home: Path) -> str:
    """The agent process's log file so far ('' before it exists)."""
    try:
        return (home / "logs" / "hermes-tui.log").read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""


def agent_env(home) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["HERMES_TUI_HOME"] = str(home)
    return env


async def started(client, home, workspace):
    """The agent process and its connection, initialized."""
    from acp import spawn_agent_process

    spawn = spawn_agent_process(
        client, sys.executable, "-m", "hermes_tui", "acp", env=agent_env(home), cwd=workspace
    )
    conn, process = await spawn.__aenter__()
    reply = await asyncio.wait_for(
        conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="test", version="1"),
        ),
        STARTED,
    )
    return spawn, conn, process, reply


TURNS = {
    "replies": [
        {"match": {"last_role": "tool"}, "text": "Done: notes.txt written."},
        {
            "match": {"last_user_contains": "make the file"},
            "reasoning": "SECRET-THOUGHT about the file",
            "text": "Writing it.",
            "tool_calls": [
                {
                    "id": "call_w",
                    "name": "write_file",
                    "arguments": {"path": "notes.txt", "content": "hello\n"},
                }
            ],
        },
        {
            "match": {"last_user_contains": "plan it"},
            "tool_calls": [
                {
                    "id": "call_t",
                    "name": "todo_write",
                    "arguments": {
                        "todos": [
                            {"text": "read the code", "status": "done"},
                            {"text": "fix the bug", "status": "in_progress"},
                        ]
                    },
                }
            ],
        },
        {
            "match": {"last_user_contains": "slow one"},
            "text": "A slow answer that waits at the gate before it goes on to the end.",
            "chunk_size": 4,
            "gate": "slow",
            "gate_after": 3,
        },
        {"match": {"last_user_contains": "queued one"}, "text": "The queued answer."},
        {
            "match": {"last_user_contains": "stop me"},
            "text": "This answer is stopped part way through its stream.",
            "chunk_size": 4,
            "gate": "never",
            "gate_after": 2,
        },
    ]
}


def test_a_session_over_acp_keeps_the_tui_contract(hermes_home, tmp_path, servers):
    """E1 (R1, T1, T6): tool call + permission + diff, thoughts never sent back, a queued
    prompt, a cancel mid-stream, then the stored session listed and loaded again."""
    server = servers.start(Script.from_dict(TURNS))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    write_config(
        hermes_home, server, agent={"approval": "ask"}, provider={"context_window": 32768},
        sandbox="off",
    )  # fmt: skip
    asyncio.run(_session_checks(server, hermes_home, workspace))


async def _session_checks(server, home, workspace):
    client = RecordingClient()
    spawn, conn, _process, reply = await started(client, home, workspace)
    try:
        assert reply.agent_capabilities.load_session is True
        entry = stdio_entry("normal")  # forked by the warm zygote: no SDK import of its own
        probe = McpServerStdio(name="probe", command=entry["command"], args=entry["args"], env=[])
        new = await asyncio.wait_for(
            conn.new_session(cwd=str(workspace), mcp_servers=[probe]), STARTED
        )
        sid = new.session_id
        assert new.modes.current_mode_id == "ask"
        assert {m.id for m in new.modes.available_modes} == {"ask", "auto-edit", "plan", "yolo"}
        assert new.config_options[0].current_value == "scripted:test-model"

        # A tool call that asks: the permission request names the call the editor shows.
        done = await asyncio.wait_for(
            conn.prompt(session_id=sid, prompt=[text_block("make the file")]), STARTED
        )
        assert done.stop_reason == "end_turn"
        assert (workspace / "notes.txt").read_text() == "hello\n"
        ((call, options),) = client.asks
        assert call.tool_call_id == "call_w"
        assert "hello" in call.content[0].content.text  # the dialog's detail: what is written
        assert {o.kind for o in options} == {"allow_once", "allow_always", "reject_once"}
        kinds = client.kinds(sid)
        assert kinds.index("agent_thought_chunk") < kinds.index("tool_call")
        assert "SECRET-THOUGHT" in client.text("agent_thought_chunk", sid)
        assert "Writing it." in client.text("agent_message_chunk", sid)
        finished = [
            u
            for _, u in client.updates
            if u.session_update == "tool_call_update" and u.status == "completed"
        ]
        diff = finished[-1].content[0]
        assert diff.type == "diff" and diff.path == str(workspace / "notes.txt")
        assert diff.new_text == "hello\n"
        # The editor's MCP server joined the session's tools (by the second call: it starts
        # in the background, as the config's servers do, M1).
        tools = {t["function"]["name"] for r in server.requests for t in r.body.get("tools", [])}
        assert "mcp__probe__echo" in tools, sorted(tools)
        # The context meter: what the last call sent, of the window.
        meter = [u for _, u in client.updates if u.session_update == "usage_update"][-1]
        assert meter.size == 32768 and 0 < meter.used < meter.size
        # R1: the reasoning reached the editor, and no later request carries it.
        assert server.requests, "the server was asked"
        assert all("SECRET-THOUGHT" not in json.dumps(r.body) for r in server.requests)

        # N2: the todo list is the editor's plan.
        await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("plan it")]), STARTED)
        plan = [u for _, u in client.updates if u.session_update == "plan"][-1]
        assert [(e.content, e.status) for e in plan.entries] == [
            ("read the code", "completed"), ("fix the bug", "in_progress"),
        ]  # fmt: skip

        # N1: modes and models are set by the client; a bad one is a one-sentence error.
        await conn.set_session_mode(session_id=sid, mode_id="auto-edit")
        with pytest.raises(acp.RequestError) as bad_mode:
            await conn.set_session_mode(session_id=sid, mode_id="reckless")
        assert "No mode called 'reckless'" in str(bad_mode.value)
        with pytest.raises(acp.RequestError) as bad_model:
            await conn.set_config_option(config_id="model", session_id=sid, value="nosuch:model")
        assert "nosuch" in str(bad_model.value)
        await conn.set_session_mode(session_id=sid, mode_id="ask")

        # T1 (queue): a prompt sent while a turn runs waits for it, then runs as its own turn.
        slow = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("slow one")]))
        await client.until(lambda: "A slow" in client.text("agent_message_chunk", sid))
        queued = asyncio.ensure_future(
            conn.prompt(session_id=sid, prompt=[text_block("queued one")])
        )
        # The gate opens only once the agent has queued the prompt behind the held turn
        # (its log says so): a prompt that arrived after the turn would prove nothing (T1).
        await asyncio.to_thread(
            wait_until,
            lambda: "prompt queued behind the running turn" in _log_text(home),
            timeout=QUEUED,
            what="the agent's log to say the prompt was queued",
        )
        server.open_gate("slow")
        assert (await asyncio.wait_for(slow, STARTED)).stop_reason == "end_turn"
        assert (await asyncio.wait_for(queued, STARTED)).stop_reason == "end_turn"
        assert "The queued answer." in client.text("agent_message_chunk", sid)
        last_users = [r.body["messages"][-1]["content"] for r in server.requests]
        assert any("queued one" in str(c) for c in last_users)

        # T6: a cancel mid-stream ends the turn as cancelled, the partial answer kept.
        stopped = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("stop me")]))
        await client.until(lambda: "This" in client.text("agent_message_chunk", sid))
        behind = asyncio.ensure_future(
            conn.prompt(session_id=sid, prompt=[text_block("never run")])
        )
        await asyncio.wait_for(conn.set_session_mode(session_id=sid, mode_id="ask"), STARTED)
        await conn.cancel(session_id=sid)
        after = asyncio.ensure_future(
            conn.prompt(session_id=sid, prompt=[text_block("queued one")])
        )
        assert (await asyncio.wait_for(stopped, STARTED)).stop_reason == "cancelled"
        # The prompt queued behind it ends cancelled, unrun; one sent after the cancel runs.
        assert (await asyncio.wait_for(behind, STARTED)).stop_reason == "cancelled"
        assert (await asyncio.wait_for(after, STARTED)).stop_reason == "end_turn"
        assert all("never run" not in json.dumps(r.body) for r in server.requests)

        # One store: the session is listed by the CLI and loads again with its history.
        listed = subprocess.run(
            [sys.executable, "-m", "hermes_tui", "sessions", "list", "--json"],
            capture_output=True, text=True, env=agent_env(home), timeout=STARTED, check=True,
        )  # fmt: skip
        titles = {
            json.loads(line)["id"]: json.loads(line)["title"] for line in listed.stdout.splitlines()
        }
        assert titles.get(sid) == "make the file"
        listed_here = await conn.list_sessions(cwd=str(workspace))
        assert [info.session_id for info in listed_here.sessions] == [sid]
        before = len(client.updates)
        await asyncio.wait_for(
            conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[]), STARTED
        )
        replay = [u for _, u in client.updates[before:]]
        shown = [u.session_update for u in replay]
        assert shown[0] == "user_message_chunk"
        assert "tool_call" in shown and "agent_thought_chunk" not in shown
        users = "".join(u.content.text for u in replay if u.session_update == "user_message_chunk")
        assert "make the file" in users and "queued one" in users

        # Protocol errors: a prompt for an unknown session is an error, not a hang.
        with pytest.raises(acp.RequestError) as unknown:
            await asyncio.wait_for(
                conn.prompt(session_id="nope", prompt=[text_block("x")]), STARTED
            )
        assert "No session 'nope'" in str(unknown.value)
    finally:
        await spawn.__aexit__(None, None, None)


STEER = {
    "replies": [
        {"match": {"last_user_contains": "also say hi"}, "text": "Read it, and hi."},
        {
            "match": {"last_user_contains": "read it"},
            "text": "Reading the file now.",
            "tool_calls": [{"id": "call_r", "name": "read_file", "arguments": {"path": "a.txt"}}],
            "chunk_size": 4,
            "gate": "read",
            "gate_after": 3,
        },
    ]
}


def test_a_prompt_during_a_turn_steers_it_when_busy_input_mode_says_steer(
    hermes_home, tmp_path, servers
):
    """E1, T1, T2: with `busy_input_mode: steer` a prompt sent while a turn runs goes into
    that turn (the next model call reads it) instead of a turn of its own; both prompts end
    with that turn."""
    server = servers.start(Script.from_dict(STEER))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("alpha\n")
    write_config(hermes_home, server, agent={"busy_input_mode": "steer"}, sandbox="off")
    asyncio.run(_steer_checks(server, hermes_home, workspace))


async def _steer_checks(server, home, workspace):
    client = RecordingClient()
    spawn, conn, _process, _reply = await started(client, home, workspace)
    try:
        new = await asyncio.wait_for(conn.new_session(cwd=str(workspace), mcp_servers=[]), STARTED)
        sid = new.session_id
        first = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("read it")]))
        await client.until(lambda: "Read" in client.text("agent_message_chunk", sid))
        steer = asyncio.ensure_future(
            conn.prompt(session_id=sid, prompt=[text_block("also say hi")])
        )
        # The agent handles requests in the order they come and takes a steer in its handler's
        # first step: the answer to a cheap request sent after it means the steer is taken.
        await asyncio.wait_for(conn.set_session_mode(session_id=sid, mode_id="yolo"), STARTED)
        server.open_gate("read")
        assert (await asyncio.wait_for(first, STARTED)).stop_reason == "end_turn"
        assert (await asyncio.wait_for(steer, STARTED)).stop_reason == "end_turn"
        assert len(server.requests) == 2, "the steer ran as a turn of its own"
        second = json.dumps(server.requests[1].body["messages"])
        assert "also say hi" in second and "Read it, and hi." in client.text("agent_message_chunk")
    finally:
        await spawn.__aexit__(None, None, None)
