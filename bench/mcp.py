"""MCP: the cost of one tool call through our client, and what tool search saves.

`mcp.call_overhead_ratio`: one `add` call through the agent's path (the registry, the MCP
tool source, the background loop, our stdio transport, the result text) over the same call
with the SDK's `Client` alone on its own loop, same server script; interleaved blocks,
medians of wall time (`mcp.call_overhead_cpu_ratio`: the same of this process's CPU time,
steadier on a loaded machine). `mcp.schema_tokens_saved`: request tokens of 3 servers x 20
tools sent directly minus the same request with tool search (estimated like the budget: 4
characters a token).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import queue
import sys
import threading
import time
from pathlib import Path

from bench._common import figure, isolated_home, median

SERVER = [sys.executable, "-m", "bench._mcp_server"]


def _config(home: Path, servers: dict, mcp: dict | None = None) -> None:
    import yaml

    data = {"agent": {"approval": "yolo"}, "mcp_servers": servers, "mcp": mcp or {}}
    (home / "config.yaml").write_text(yaml.safe_dump(data))


def _entry(count: int = 0, prefix: str = "tool") -> dict:
    return {"command": SERVER[0], "args": [*SERVER[1:], str(count), prefix]}


def _agent(home: Path, workspace: Path):
    from agent.config import load_config
    from agent.loop import Agent
    from agent.mcp.attach import attach_mcp

    agent = Agent(load_config(), workspace=workspace)
    manager = attach_mcp(agent, workspace)
    deadline = time.monotonic() + 60
    while manager.starting() and time.monotonic() < deadline:
        time.sleep(0.05)  # servers start in the background; the bench needs them ready
    return agent, manager


class SdkSide:
    """The SDK's Client alone, on a loop of its own, in one task from enter to exit."""

    def __init__(self) -> None:
        self.requests: queue.Queue[int | None] = queue.Queue()
        self.results: queue.Queue[float] = queue.Queue()
        self.thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)
        self.thread.start()

    async def _main(self) -> None:
        from mcp import Client, StdioServerParameters

        params = StdioServerParameters(command=SERVER[0], args=[*SERVER[1:], "0"])
        async with Client(params, mode="legacy") as client:
            while (calls := await asyncio.to_thread(self.requests.get)) is not None:
                start = time.perf_counter()
                for _ in range(calls):
                    await client.call_tool("add", {"a": 1, "b": 2})
                self.results.put((time.perf_counter() - start) / calls)

    def block(self, calls: int) -> float:
        """Seconds per call over `calls` calls."""
        self.requests.put(calls)
        return self.results.get(timeout=120)

    def close(self) -> None:
        self.requests.put(None)
        self.thread.join(30)


def call_overhead(home: Path, workspace: Path, blocks: int, calls: int) -> None:
    """Ours vs the SDK client alone, one `add` call, interleaved blocks."""
    from agent.tools.registry import ToolContext

    _config(home, {"b": _entry()})
    agent, manager = _agent(home, workspace)
    context = ToolContext(workspace=workspace, approval_mode="yolo")
    sdk_side = SdkSide()

    def ours_block() -> float:
        start = time.perf_counter()
        for _ in range(calls):
            result = agent.registry.run("mcp__b__add", {"a": 1, "b": 2}, context)
            assert result.ok and result.output == "3", result
        return (time.perf_counter() - start) / calls

    def cpu(block) -> tuple[float, float]:
        # The process's CPU time per call too: blocks run one at a time, so it is the side
        # measured (both threads of ours, the SDK's loop thread), and a loaded machine's
        # waits for a core, which swamp the wall clock, are left out of it.
        start = time.process_time()
        wall = block()
        return wall, (time.process_time() - start) / calls

    ours_block()
    sdk_side.block(calls)  # warm both
    ours, sdk, ours_cpu, sdk_cpu = [], [], [], []
    for _ in range(blocks):
        wall, used = cpu(ours_block)
        ours.append(wall)
        ours_cpu.append(used)
        wall, used = cpu(lambda: sdk_side.block(calls))
        sdk.append(wall)
        sdk_cpu.append(used)
    sdk_side.close()
    manager.close()
    figure("mcp.ours_ms_per_call", median(ours) * 1000)
    figure("mcp.sdk_ms_per_call", median(sdk) * 1000)
    figure("mcp.call_overhead_ms", (median(ours) - median(sdk)) * 1000)
    figure("mcp.call_overhead_ratio", median(ours) / median(sdk))
    figure("mcp.ours_cpu_ms_per_call", median(ours_cpu) * 1000)
    figure("mcp.sdk_cpu_ms_per_call", median(sdk_cpu) * 1000)
    figure("mcp.call_overhead_cpu_ratio", median(ours_cpu) / median(sdk_cpu))


def schema_savings(home: Path, workspace: Path) -> None:
    """Request tokens, 3 servers x 20 tools: every schema vs tool search."""
    from agent.models import tokens_for_chars

    servers = {name: _entry(20, name) for name in ("files", "issues", "docs")}
    _config(home, servers, {"tool_search": "never"})
    agent, manager = _agent(home, workspace)

    def request_tokens() -> int:
        request = agent.request()
        return tokens_for_chars(len(request.system or "") + len(json.dumps(request.tools)))

    direct = request_tokens()
    manager.settings = type(manager.settings)(tool_search="always")
    searched = request_tokens()
    tools = len(manager.tools())
    manager.close()
    figure("mcp.tools", tools)
    figure("mcp.request_tokens_direct", direct)
    figure("mcp.request_tokens_tool_search", searched)
    figure("mcp.schema_tokens_saved", direct - searched)
    figure("mcp.schema_saved_ratio", direct / searched)


def main(argv: list[str]) -> int:
    """Print the MCP figures."""
    parser = argparse.ArgumentParser(prog="python3 -m bench mcp")
    parser.add_argument("--blocks", type=int, default=15)
    parser.add_argument("--calls", type=int, default=40)
    args = parser.parse_args(argv)
    home = isolated_home()
    workspace = home / "ws"
    workspace.mkdir()
    call_overhead(home, workspace, args.blocks, args.calls)
    schema_savings(home, workspace)
    return 0
