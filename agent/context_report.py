"""What the next request holds, part by part, in estimated tokens (the `/context` view, P1)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent.messages import model_visible
from agent.models import estimate_image_tokens, estimate_tokens, tokens_for_chars

if TYPE_CHECKING:
    from agent.loop import Agent


@dataclass(frozen=True)
class FileCost:
    """One instruction file's share: its path as shown, its scope, its tokens."""

    shown: str
    scope: str
    tokens: int
    truncated: bool


@dataclass(frozen=True)
class ContextReport:
    """The next request's parts in estimated tokens, and the model's window (None: unknown)."""

    system: int
    instructions: int
    files: tuple[FileCost, ...]
    tools: int
    tool_count: int
    history: int
    messages: int
    window: int | None
    images: int = 0
    """How many images the history carries (their tokens are in `history`, G4)."""
    image_tokens: int = 0

    @property
    def total(self) -> int:
        """Every part together."""
        return self.system + self.instructions + self.tools + self.history


def context_report(agent: Agent) -> ContextReport:
    """The parts of the request `agent` would send now (estimates: ~4 characters a token)."""
    request = agent.request()
    section = agent.context.instructions.prompt_section()
    system = request.system or ""  # (the agent's requests always carry their prompt)
    base = system[: len(system) - len(section)] if section else system
    files = tuple(FileCost(f.listed, f.scope, f.tokens, f.truncated) for f in agent.context.files)
    visible = model_visible(request.messages)
    return ContextReport(
        system=tokens_for_chars(len(base.rstrip())),
        instructions=tokens_for_chars(len(section)),
        files=files,
        tools=tokens_for_chars(len(json.dumps(request.tools))) if request.tools else 0,
        tool_count=len(request.tools or ()),
        history=estimate_tokens(visible, wire=request.wire) if visible else 0,
        messages=len(visible),
        window=agent.context_window,
        images=sum(len(m.images) for m in visible),
        image_tokens=estimate_image_tokens(visible, request.wire),
    )
