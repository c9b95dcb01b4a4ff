"""Pieces of a turn that build things from its host: the user's message, a batch's tool
context, the stored images a request needs. Apart from `Turn` so it stays one idea."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent import events as ev
from agent import recovery
from agent.messages import Message
from agent.modes import switch_mode
from agent.todos import keep_todos

if TYPE_CHECKING:
    from agent.tools.registry import ToolContext
    from agent.turn import TurnHost


def take_user_message(
    host: TurnHost, text: str, shown: str | None, note_kind: str | None, context: str = ""
) -> Message:
    """Append the user's message, its `@path` mentions attached (P2) and the hooks'
    `context` after it (N4), show them; return it."""
    meta = recovery.note_metadata(note_kind) if note_kind else None
    message, attached = host.context.user_message(
        text,
        shown=shown,
        metadata=meta,
        redact=host.secrets.redact,
        window=host.context_window,
        images=takes_images(host),
    )
    if context:
        from agent.attachments import SHOWN_KEY

        # The model reads the hooks' text with the message; the transcript shows what
        # was typed, live and on resume.
        kept = dict(message.display_metadata or {})
        kept.setdefault(SHOWN_KEY, text if shown is None else shown)
        message.content = f"{message.content}\n\n{host.secrets.redact(context)}"
        message.display_metadata = kept
    host.append(message, persist=True)
    if attached:
        host.sink(ev.InputAttached(attached))
    return message


def takes_images(host: TurnHost) -> bool:
    """Whether the turn's model is sent images (an unknown provider fails later, as it
    always has: its request says why)."""
    provider = host.config.providers.get(host.provider_name)
    return provider is None or provider.takes_images(host.model_name)


def tool_context(host: TurnHost) -> ToolContext:
    """What a batch's tools run with: the session's mode, rules, sandbox and homes now."""
    from agent.background import BACKGROUND
    from agent.tools.registry import ToolContext

    checkpointer = host.checkpointer
    return ToolContext(
        workspace=host.workspace,
        # The session's mode now: a switch during a turn acts from its next batch (N1).
        approval_mode=host.approval_mode,
        shell_timeout=host.config.agent.shell_timeout_seconds,
        cancel=host.control.tool_cancel,
        hidden_env=host.secrets.hidden_env(),
        approvals=host.approvals,
        before_change=checkpointer.before_change if checkpointer else None,
        after_change=checkpointer.after_change if checkpointer else None,
        sandbox=host.sandbox,
        app_homes=host.config.app_homes,
        switch_mode=lambda mode: switch_mode(host, mode),
        permissions=host.permissions,
        keep_todos=lambda todos: keep_todos(host, todos),
        web=host.config.web,
        background=BACKGROUND,
    )


def load_images(host: TurnHost) -> None:
    """The bytes of a resumed session's images, from the store, before they are sent (G4)."""
    for message in host.messages:
        for image in message.images:
            if image.data is None:
                image.data = host.writer.load_blob(host.session_id, image.sha256)
