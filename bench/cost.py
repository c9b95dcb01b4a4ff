"""What prompt caching saves on the Anthropic wire ($1).

A 30-turn session (each turn: a question, a read_file call, its result, an answer) is played
twice through the Agent against the scripted server's `anthropic` persona, which bills the
prompt cache as Anthropic documents it (the prefix up to each `cache_control` breakpoint,
a 1,024-token minimum, reads and writes): once with the app's breakpoints, once with
`cache_breakpoints: false`. Input is priced at the table's Claude Sonnet list prices (cache
reads a tenth of the input price, 5-minute writes 1.25 times it). Prints
`cost.cached_over_uncached` (input cost with caching / without; target <= 0.35) and the
tokens behind it.
"""

from __future__ import annotations

import argparse
from typing import Any

from bench._common import figure, isolated_home

TURNS = 30
MODEL = "claude-sonnet-4-5"
SOURCE = "def handle(args):\n    return run(args, verbose=args.verbose)\n" * 40


def script() -> dict[str, Any]:
    """Each turn: a read_file call, then an answer."""
    return {
        "loop": True,
        "defaults": {"chunk_size": 256},
        "server": {"persona": "anthropic"},
        "replies": [
            {
                "match": {"last_role": "user"},
                "text": "Let me read the parser first.",
                "tool_calls": [
                    {"id": "r_{n}", "name": "read_file", "arguments": {"path": "src/cli.py"}}
                ],
            },
            {
                "match": {"last_role": "tool"},
                "text": "The flag goes into src/cli.py as parser.add_argument(...); done. " * 3,
            },
        ],
    }


def play(home: Any, workspace: Any, turns: int, *, breakpoints: bool) -> tuple[float, Any]:
    """One session of `turns` turns: (its input cost in USD, its usage totals)."""
    from agent.config import load_config
    from agent.loop import Agent
    from agent.price_table import price_table
    from agent.pricing import Price
    from agent.providers.base import UsagePart
    from agent.scripted import Script, ScriptedServer

    server = ScriptedServer(Script.from_dict(script())).start()
    (home / "config.yaml").write_text(
        f"model: bench:{MODEL}\n"
        f"providers: {{bench: {{kind: anthropic, base_url: '{server.anthropic_base_url}', "
        f"api_key: k, context_window: 1000000, cache_breakpoints: {str(breakpoints).lower()}}}}}\n"
        "agent: {approval: yolo, retry_base_seconds: 0.01}\n"
    )
    agent = Agent(load_config(), workspace=workspace)
    try:
        for i in range(turns):
            result = agent.run_turn(f"Step {i} of {turns}: add the flag --option-{i} and test it.")
            assert result.status == "ok", result.error
        totals = agent.usage
    finally:
        agent.close()
        server.stop()
    prices = price_table().models["anthropic"][MODEL]
    price = Price.of(prices, "table", input_includes_cache=False, dated=None)
    usage = UsagePart(
        input_tokens=totals.input_tokens,
        cache_read_tokens=totals.cache_read_tokens,
        cache_write_tokens=totals.cache_write_tokens,
    )
    return price.cost(usage)[0], totals


def main(argv: list[str]) -> int:
    """Print cost.cached_over_uncached and the tokens of both sessions."""
    parser = argparse.ArgumentParser(prog="python3 -m bench cost")
    parser.add_argument("--turns", type=int, default=TURNS)
    args = parser.parse_args(argv)
    home = isolated_home()
    workspace = home / "ws"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "cli.py").write_text(SOURCE)
    uncached, plain = play(home, workspace, args.turns, breakpoints=False)
    cached, totals = play(home, workspace, args.turns, breakpoints=True)
    figure("cost.uncached_input_usd", uncached)
    figure("cost.cached_input_usd", cached)
    figure("cost.uncached_input_tokens", plain.input_tokens)
    figure("cost.cache_read_tokens", totals.cache_read_tokens)
    figure("cost.cache_write_tokens", totals.cache_write_tokens)
    figure("cost.uncached_tokens_with_caching", totals.input_tokens)
    figure("cost.cached_over_uncached", cached / uncached)
    return 0
