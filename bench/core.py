"""Agent overhead: N multi-call turns through the Agent vs. a bare SDK loop, side by side."""

from __future__ import annotations

import argparse
import asyncio
import threading
import time

from bench._common import figure, isolated_home, median

SCRIPT = {
    "loop": True,
    "defaults": {"chunk_size": 16},
    "replies": [
        {
            "match": {"last_role": "user"},
            "reasoning": "I will look at the workspace first. " * 4,
            "text": "Let me list the files.",
            "tool_calls": [{"id": "c_{n}", "name": "list_dir", "arguments": {"path": "."}}],
        },
        {
            "match": {"last_role": "tool", "any_contains": '"zq_'},
            "text": "Here is the summary of what I found, in some detail. " * 20,
        },
        {
            "match": {"last_role": "tool"},
            "text": "Now a second look. " * 3,
            "tool_calls": [{"id": "zq_{n}", "name": "glob", "arguments": {"pattern": "*.md"}}],
        },
    ],
}


def _bare_turn(client, tools) -> None:
    """The same three streamed calls driven directly with the openai SDK."""
    messages = [{"role": "user", "content": "look around"}]
    for _ in range(3):
        stream = client.chat.completions.create(
            model="bench", messages=messages, tools=tools, stream=True
        )
        text, calls = [], {}
        for chunk in stream:
            if not chunk.choices:
                continue
            delta = chunk.choices[0].delta
            if delta.content:
                text.append(delta.content)
            for call in delta.tool_calls or ():
                slot = calls.setdefault(call.index, {"id": call.id, "name": "", "args": ""})
                if call.function and call.function.name:
                    slot["name"] = call.function.name
                if call.function and call.function.arguments:
                    slot["args"] += call.function.arguments
        if not calls:
            return
        messages.append(
            {
                "role": "assistant",
                "content": "".join(text) or None,
                "tool_calls": [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": c["name"], "arguments": c["args"]},
                    }
                    for c in calls.values()
                ],
            }
        )
        for c in calls.values():
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": "README.md"})


def main(argv: list[str]) -> int:
    """Print core.overhead_ratio (agent time per turn / bare SDK loop time per turn)."""
    parser = argparse.ArgumentParser(prog="python3 -m bench core")
    parser.add_argument("--turns", type=int, default=30)
    args = parser.parse_args(argv)
    home = isolated_home()
    workspace = home / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("# bench\n")

    import openai

    from agent.config import load_config
    from agent.loop import Agent
    from agent.scripted import Script, ScriptedServer
    from storage.db import SessionDB

    server = ScriptedServer(Script.from_dict(SCRIPT)).start()
    url = server.openai_base_url
    (home / "config.yaml").write_text(
        "model: bench:bench\n"
        f"providers: {{bench: {{kind: openai, base_url: '{url}', api_key: k}}}}\n"
        "agent: {approval: yolo}\n"
    )
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    db = asyncio.run_coroutine_threadsafe(SessionDB.open(home / "state.db"), loop).result()
    agent = Agent(load_config(), store=db, workspace=workspace)
    client = openai.OpenAI(base_url=server.openai_base_url, api_key="k", max_retries=0)
    tools = [
        {"type": "function", "function": {"name": s["name"], "parameters": s["parameters"]}}
        for s in agent.registry.schemas()
    ]

    def agent_turn() -> None:
        agent.new_session()
        result = agent.run_turn("look around")
        assert result.status == "ok", result.error

    agent_turn()
    _bare_turn(client, tools)  # warm both paths before measuring
    agent_times, bare_times = [], []
    for _ in range(args.turns):  # interleaved, so machine noise hits both sides alike
        start = time.perf_counter()
        agent_turn()
        agent_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        _bare_turn(client, tools)
        bare_times.append(time.perf_counter() - start)

    agent.close()
    client.close()
    asyncio.run_coroutine_threadsafe(db.close(), loop).result()
    loop.call_soon_threadsafe(loop.stop)
    server.stop()
    figure("core.agent_ms_per_turn", median(agent_times) * 1000)
    figure("core.bare_ms_per_turn", median(bare_times) * 1000)
    figure("core.overhead_ratio", median(agent_times) / median(bare_times))
    return 0
