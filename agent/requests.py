"""The next model call as an agent would send it now: system prompt, history, tools, routing."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.config import Config, split_model_ref
from agent.messages import Message
from agent.project_context import ProjectContext
from agent.prompts import system_prompt, with_mode
from agent.providers.base import ChatRequest

if TYPE_CHECKING:
    from agent.tools.registry import ToolRegistry


def next_request(
    config: Config,
    model_ref: str,
    messages: list[Message],
    *,
    session_id: str | None,
    context: ProjectContext,
    registry: ToolRegistry,
    workspace: Path,
    extra_body: dict[str, Any] | None = None,
    mode: str | None = None,
    system: str | None = None,
) -> ChatRequest:
    """The request of `messages` to `model_ref`, with the instruction files and the tools
    (`extra_body`: more fields for the body; the routing key is added to them; `mode`: the
    session's approval mode, which decides the tools offered and the plan-mode prompt;
    `system`: a base prompt of its own, a subagent's, instead of the configured one)."""
    provider_name, model = split_model_ref(model_ref)
    provider = config.provider(provider_name)
    body = dict(extra_body or {})
    if session_id and provider.sticky_routing:
        # C7: the sticky routing key is the session's root id (sessions never rotate at
        # compaction, so the root id is the session id).
        body["session_id"] = session_id
    if not provider.takes_images(model):
        messages = without_images(messages)
    return ChatRequest(
        model=model,
        messages=messages,
        system=context.system(
            with_mode(system or config.agent.system_prompt or system_prompt(workspace), mode)
        ),
        tools=registry.schemas(mode),
        max_tokens=provider.max_tokens,
        extra_body=body,
        wire=str(provider.kind),
    )


NOT_SENT = "[image {name}: not shown, this model does not take images]"
"""What a model known not to take images reads in place of one (G4)."""


def without_images(messages: list[Message]) -> list[Message]:
    """`messages` with every image replaced by a line saying it was not sent (G4)."""
    if not any(m.images for m in messages):
        return messages
    return [
        replace(
            m,
            images=[],
            content="\n".join([m.content, *(NOT_SENT.format(name=i.name) for i in m.images)]),
        )
        if m.images
        else m
        for m in messages
    ]
