"""Where a turn meets the user's hooks (N4): its start, each tool call, and its end.

The turn calls these at its points; each builds the event's data, runs the hooks through
`Hooks.run` (agent/hooks/engine.py) and turns what they said into what the turn does: text
the model reads, a refused call, a blocked message, or feedback that sends the agent back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent import events as ev
from agent.hooks.answers import Decision
from agent.hooks.engine import HookEnv, HookOutcome, Hooks
from agent.hooks.rows import HOOK_ROW
from agent.text_cuts import cut_with_ellipsis

if TYPE_CHECKING:
    import threading

    from agent.messages import ToolCall

HOOK_NOTE_KIND = "hook"
"""The note kind of a user message a turn_end hook's feedback became (the user did not type it)."""
DENIED_BY_HOOK = "Refused by the user's before_tool hook {name}: {reason}"
SENT_BACK = (
    "[hermes-tui: the user's turn_end hook {name} does not accept the turn as finished "
    "({round} of at most {limit}). Its feedback:]\n{reason}"
)
BLOCKED = "The user's prompt hook {name} blocked this message: {reason}"
RESPONSE_CHARS = 20_000
"""Characters of a tool's output the after_tool hooks get on stdin."""


@dataclass
class TurnHooks:
    """One turn's door to the hooks: the engine, and how rows and notices reach the session."""

    hooks: Hooks
    session_id: Callable[[], str | None]
    keep_row: Callable[[str, dict[str, Any]], None]
    sink: ev.Sink
    hidden_env: Callable[[], frozenset[str]]
    cancel: threading.Event
    redact: Callable[[str], str]

    @classmethod
    def of(cls, host: Any) -> TurnHooks:
        """The door of a turn of `host` (a `TurnHost`: its hooks, session, sink and stop)."""
        return cls(
            host.hooks,
            lambda: host.session_id,
            host.add_display_row,
            host.sink,
            lambda: host.secrets.hidden_env(),
            host.control.tool_cancel,
            lambda text: host.secrets.redact(text),
        )

    def env(self) -> HookEnv:
        """What an event's runs need now."""
        return HookEnv(
            self.session_id(),
            # A row is shown and stored: redacted like a tool's output (H5).
            lambda meta: self.keep_row(HOOK_ROW, {**meta, "summary": self.redact(meta["summary"])}),
            self.hidden_env(),
            self.cancel,
        )

    def at_start(self, typed: str, *, resumed: bool) -> tuple[str, str | None]:
        """session_start (the first turn of a session in this process) and prompt hooks:
        (context for the model, the sentence that blocks the message or None)."""
        notice = self.hooks.unconsented_notice()
        if notice:
            self.sink(ev.Notice(notice, "warning"))
        context: list[str] = []
        if self.hooks.first_in_session(self.session_id()):
            source = "resume" if resumed else "new"
            started = self.hooks.run("session_start", {"source": source}, self.env())
            context += started.context
        said = self.hooks.run("prompt", {"prompt": typed}, self.env())
        if said.decision == Decision.DENY:
            reason = said.reason or "no reason given"
            return "", BLOCKED.format(name=said.by, reason=reason)
        return "\n\n".join([*context, *said.context]), None

    def before_tool(self, call: ToolCall, args: dict[str, Any]) -> HookOutcome:
        """before_tool hooks of `call`: allow, deny (with the reason) or ask, or nothing."""
        data = {"tool_name": call.name, "tool_input": args}
        return self.hooks.run("before_tool", data, self.env(), tool=call.name)

    def after_tool(self, call: ToolCall, args: dict[str, Any], ok: bool, output: str) -> str:
        """after_tool hooks of `call`: the text to add to its result for the model ("")."""
        response = {"ok": ok, "output": cut_with_ellipsis(output, RESPONSE_CHARS)}
        data = {"tool_name": call.name, "tool_input": args, "tool_response": response}
        said = self.hooks.run("after_tool", data, self.env(), tool=call.name)
        parts = list(said.context)
        if said.decision == Decision.DENY and said.reason:
            parts.append(f"[after_tool hook {said.by}]\n{said.reason}")
        return "\n\n".join(parts)

    def at_end(self, answer: str, sent_back: int) -> str | None:
        """turn_end hooks: the feedback that sends the agent back, or None (the turn ends)."""
        if not self.hooks.hooks_for("turn_end"):
            return None
        said = self.hooks.run("turn_end", {"answer": answer, "sent_back": sent_back}, self.env())
        if said.decision != Decision.DENY:
            return None
        limit = self.hooks.turn_end_limit
        if sent_back >= limit:
            self.sink(
                ev.Notice(
                    f"The turn_end hook {said.by} still objects, but it sent the agent back "
                    f"{limit} time(s) already (hooks.turn_end_limit): the turn ends here.",
                    "warning",
                )
            )
            return None
        return SENT_BACK.format(
            name=said.by, round=sent_back + 1, limit=limit, reason=said.reason or "(no reason)"
        )
