"""Compaction shrinks the context, and its calls are accounted (SPEC C1, S2).

Scripted sessions of 10, 50 and 200 turns (each: a question, a read_file call, its result
and an answer) are played through the Agent against the scripted server, which counts a
request's prompt tokens (4 characters a token of the request body) and stops a reply at its
`max_tokens` the way llama.cpp does. Then `/compact`, and one more turn. Prints
`compaction.shrink_ratio` (prompt tokens of the first request of the turn after compaction /
of the last turn's before it, by the server's count, median over the sessions; target
<= 0.5)
and `compaction.summary_calls_accounted` (summary calls in the session's api_call_count /
summary requests the server received; 1.0).
"""

from __future__ import annotations

import argparse
import asyncio
import threading
from pathlib import Path
from typing import Any

from bench._common import figure, isolated_home, median

SESSIONS = (10, 50, 200)
SUMMARY = (
    "The user is adding command-line flags to the tool in src/. Files read: src/cli.py "
    "(the argument parser), src/run.py (the entry point), src/config.py (settings). "
    "Decided: every flag is parsed in src/cli.py and passed to run() as a keyword; tests "
    "go in tests/test_cli.py. Done so far: the flags of the earlier steps are in place and "
    "their tests pass. Open: nothing failing. Next: the user's next flag. "
) * 2
SOURCE = "def handle(args):\n    return run(args, verbose=args.verbose)\n" * 20


def script() -> dict[str, Any]:
    """Each turn: a read_file call, then an answer; a summary request gets a summary."""
    return {
        "loop": True,
        "honour_max_tokens": True,
        "defaults": {"chunk_size": 256},
        "replies": [
            {"match": {"system_contains": "You summarise a conversation"}, "text": SUMMARY},
            {
                "match": {"last_role": "user"},
                "text": "Let me read the parser first.",
                "tool_calls": [
                    {"id": "r_{n}", "name": "read_file", "arguments": {"path": "src/cli.py"}}
                ],
            },
            {
                "match": {"last_role": "tool"},
                "text": (
                    "The flag goes into src/cli.py as parser.add_argument(...), and run() "
                    "takes it as a keyword. I added a test in tests/test_cli.py that checks "
                    "the default and the flag set; the suite passes. "
                )
                * 2,
            },
        ],
    }


def session(agent: Any, server: Any, db: Any, loop: Any, turns: int) -> tuple[float, float]:
    """Play `turns` turns, compact, one more turn: (shrink ratio, summary calls accounted)."""
    agent.new_session()
    for i in range(turns):
        last = f"Step {i} of {turns}: add the flag --option-{i} to the CLI and test it."
        result = agent.run_turn(last)
        assert result.status == "ok", result.error
    before = _first_turn_request(server, last)
    calls = _calls(agent, db, loop)
    summaries = _summary_requests(server)
    result = agent.compact()
    assert result.ok, result.message
    summary_requests = _summary_requests(server) - summaries
    accounted = _calls(agent, db, loop) - calls
    following = f"Step {turns} of {turns}: add the last flag."
    assert agent.run_turn(following).status == "ok"
    after = _first_turn_request(server, following)
    return after / before, accounted / summary_requests


def _first_turn_request(server: Any, text: str) -> int:
    """The server's prompt count of the turn's first request: the one that ends with `text`,
    the user's message (the scripted server counts 4 characters of the body a token)."""
    for request in reversed(server.requests):
        body = request.body or {}
        messages = body.get("messages") or []
        if messages and messages[-1].get("content") == text:
            return len(request.raw) // 4
    raise AssertionError(f"no request ends with {text!r}")


def _summary_requests(server: Any) -> int:
    return sum(b"You summarise a conversation" in r.raw for r in server.requests)


def _calls(agent: Any, db: Any, loop: Any) -> int:
    """The session's stored api_call_count, once queued counts are written."""
    agent.writer.flush(agent.session_id, tokens=True, when="bench")
    row = asyncio.run_coroutine_threadsafe(db.get_session(agent.session_id), loop).result()
    return row["api_call_count"]


def main(argv: list[str]) -> int:
    """Print compaction.shrink_ratio and compaction.summary_calls_accounted."""
    parser = argparse.ArgumentParser(prog="python3 -m bench compaction")
    parser.add_argument("--sessions", type=int, nargs="+", default=list(SESSIONS))
    args = parser.parse_args(argv)
    home = isolated_home()
    workspace = home / "ws"
    (workspace / "src").mkdir(parents=True)
    Path(workspace / "src" / "cli.py").write_text(SOURCE)

    from agent.config import load_config
    from agent.loop import Agent
    from agent.scripted import Script, ScriptedServer
    from storage.db import SessionDB

    server = ScriptedServer(Script.from_dict(script())).start()
    (home / "config.yaml").write_text(
        "model: bench:bench-model\n"
        f"providers: {{bench: {{kind: openai, base_url: '{server.openai_base_url}', "
        "api_key: k, context_window: 1000000}}\n"
        "agent: {approval: yolo, retry_base_seconds: 0.01}\n"
    )
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    db = asyncio.run_coroutine_threadsafe(SessionDB.open(home / "state.db"), loop).result()
    agent = Agent(load_config(), store=db, workspace=workspace)
    ratios, accounted = [], []
    try:
        for turns in args.sessions:
            ratio, share = session(agent, server, db, loop, turns)
            figure(f"compaction.shrink_ratio_{turns}_turns", ratio)
            ratios.append(ratio)
            accounted.append(share)
    finally:
        agent.close()
        asyncio.run_coroutine_threadsafe(db.close(), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        server.stop()
    figure("compaction.shrink_ratio", median(ratios))
    figure("compaction.summary_calls_accounted", min(accounted))
    return 0
