"""`hooks:` in config.yaml (and a project's `.hermes-tui/hooks.yaml`): commands by event (N4)."""

from __future__ import annotations

from typing import Annotated

from agent.config_check import AtLeast, Check, Must, settings

DEFAULT_TIMEOUT_SECONDS = 30.0
MAX_TIMEOUT_SECONDS = 600.0
DEFAULT_TURN_END_LIMIT = 3
EVENTS = ("before_tool", "after_tool", "prompt", "turn_end", "session_start")
"""The events hooks run on, in the order a turn meets them (session_start first of all)."""
TOOL_EVENTS = ("before_tool", "after_tool")
"""The events whose hooks a tool-name pattern (`match`) selects."""


def _not_a_timeout(seconds: float) -> str | None:
    if 0 < seconds <= MAX_TIMEOUT_SECONDS:
        return None
    return f"must be more than 0 and at most {MAX_TIMEOUT_SECONDS:.0f} seconds"


def _blank(text: str) -> str | None:
    return "must not be empty" if not text.strip() else None


@settings
class HookSpec:
    """One hook: the shell command, the tools it is for (tool events), its timeout, a name."""

    command: Annotated[str, Check(_blank), Must("be the shell command to run")]
    match: str = "*"
    """Tool names (fnmatch patterns, `|` between alternatives: `write_file|edit_file`,
    `mcp__git__*`); read on tool events only."""
    timeout: Annotated[float, Check(_not_a_timeout)] = DEFAULT_TIMEOUT_SECONDS
    name: str | None = None
    """What its rows call it; by default the command's first word (`ruff`)."""


Hooks = Annotated[
    tuple[HookSpec, ...], Must("be a list of hooks like {match: run_shell, command: ...}")
]


@settings
class HookSettings:
    """`hooks:`: the commands of each event, and how often turn_end may send the agent back."""

    before_tool: Hooks = ()
    after_tool: Hooks = ()
    prompt: Hooks = ()
    turn_end: Hooks = ()
    session_start: Hooks = ()
    turn_end_limit: Annotated[int, AtLeast(0)] = DEFAULT_TURN_END_LIMIT
    """How many times turn_end hooks may send the agent back in one turn; then it stops."""

    def of(self, event: str) -> tuple[HookSpec, ...]:
        """The hooks of `event` (one of EVENTS)."""
        hooks: tuple[HookSpec, ...] = getattr(self, event)
        return hooks

    @property
    def empty(self) -> bool:
        """True when no event has a hook."""
        return not any(self.of(event) for event in EVENTS)
