"""One batch of tool calls: ask, run, redact, keep and announce each result, in order.

Every call gets a result, even after a stop (a call without one makes the next request
malformed); tool errors are results for the model, never a crash of the turn (A4). Calls a
tool marks `side_by_side` (read-only subagents, G1) that come one after another run at once,
up to `SIDE_BY_SIDE` of them; their results are still kept in the calls' order.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from agent import events as ev
from agent.control import TurnControl, TurnStopped
from agent.kinds import IMAGES_KEY, ToolOutcome
from agent.messages import Message, ToolCall

if TYPE_CHECKING:
    from agent.ports import ApprovalPolicy
    from agent.tools.registry import ToolContext, ToolRegistry, ToolResult
    from agent.turn_hooks import TurnHooks

STOPPED_RESULT = "Cancelled: the user stopped the turn."
SIDE_BY_SIDE = 3
"""At most this many side-by-side calls run at once (each is a subagent's model calls)."""


@dataclass
class ToolBatch:
    """What a batch runs with: the tools, the context, the approver and where results go."""

    registry: ToolRegistry
    control: TurnControl
    context: ToolContext
    approve: ApprovalPolicy | None
    sink: ev.Sink
    touch: Callable[[], None]
    redact: Callable[[str], str]
    keep: Callable[[Message], None]
    """Appends a result to the conversation and persists it."""
    hooks: TurnHooks | None = None
    """The user's before_tool and after_tool hooks (N4); None: no hooks."""

    def run(self, calls: list[ToolCall], *, stopped: bool = False) -> None:
        """Run `calls` in order; raises TurnStopped after the batch when the turn was stopped."""
        from agent.tools.registry import ToolResult

        index = 0
        while index < len(calls):
            if stopped or self.control.stopped:
                # Every call needs a result or the next request is malformed.
                self.result(calls[index], ToolResult(False, STOPPED_RESULT), 0.0, announce=False)
                stopped = True
                index += 1
                continue
            group = self.side_by_side(calls, index)
            if len(group) > 1:
                self.run_together(group)
            else:
                self.run_one(calls[index])
            index += len(group) or 1
        if stopped:
            raise TurnStopped

    def side_by_side(self, calls: list[ToolCall], start: int) -> list[ToolCall]:
        """The calls from `start` on that may run at once (one or none: run it alone)."""
        group: list[ToolCall] = []
        for call in calls[start:]:
            tool = self.registry.get(call.name)
            try:
                args = call.parsed_arguments()
            except ValueError:
                break
            if tool is None or tool.side_by_side is None or not tool.side_by_side(args or {}):
                break
            group.append(call)
        return group

    def run_together(self, calls: list[ToolCall]) -> None:
        """Run side-by-side calls at once (bounded); keep and announce them in order."""
        with ThreadPoolExecutor(min(SIDE_BY_SIDE, len(calls)), "side-by-side") as pool:
            futures = [pool.submit(self.execute, call, replace(self.context)) for call in calls]
            for call, future in zip(calls, futures, strict=True):
                result, duration = future.result()
                self.touch()
                self.result(call, result, duration)

    def run_one(self, call: ToolCall) -> None:
        """Announce, ask if needed, run and keep one call; its duration leaves out the asking."""
        result, duration = self.execute(call, self.context)
        self.touch()
        self.result(call, result, duration)

    def execute(self, call: ToolCall, context: ToolContext) -> tuple[ToolResult, float]:
        """Announce, ask if needed and run one call in `context`: its result and duration."""
        from agent.tools.registry import ToolResult

        try:
            args = call.parsed_arguments()
        except ValueError as exc:
            args = None
            result = ToolResult(
                False, f"Invalid arguments for {call.name}: {exc}. Send a JSON object."
            )
        summary = self.registry.summary(call.name, args or {})
        self.touch()
        self.sink(ev.ToolStarted(call.id, call.name, args or {}, summary))
        started = time.monotonic()
        waited = [0.0]
        if args is not None:
            context.approve = self.asking_for(call, waited)
            context.call_id = call.id
            result = self.run_hooked(call, args, waited, context)
        return result, time.monotonic() - started - waited[0]

    def run_hooked(
        self, call: ToolCall, args: dict[str, Any], waited: list[float], context: ToolContext
    ) -> ToolResult:
        """Run `call` between its before_tool and after_tool hooks: a deny refuses it, an
        allow or ask changes only whether it is asked (N4), after_tool's text joins its result.
        The hooks' time goes to `waited`: the call's duration is its own (hooks have rows)."""
        from agent.hooks.answers import Decision
        from agent.tools.registry import ToolResult
        from agent.turn_hooks import DENIED_BY_HOOK

        if self.hooks is None:
            return self.registry.run(call.name, args, context)
        hooked = time.monotonic()
        said = self.hooks.before_tool(call, args)
        waited[0] += time.monotonic() - hooked
        if said.decision == Decision.DENY:
            reason = said.reason or "no reason given"
            return ToolResult(False, DENIED_BY_HOOK.format(name=said.by, reason=reason))
        context.hook_decision = str(said.decision)
        try:
            result = self.registry.run(call.name, args, context)
        finally:
            context.hook_decision = ""
        if result.declined:
            return result
        hooked = time.monotonic()
        extra = self.hooks.after_tool(call, args, result.ok, result.output)
        waited[0] += time.monotonic() - hooked
        return replace(result, output=f"{result.output}\n\n{extra}") if extra else result

    def asking_for(self, call: ToolCall, waited: list[float]) -> Callable[[Any], Any] | None:
        """The approver for `call`: tells the UI the call waits, and adds the wait to `waited`."""
        from agent.tools.approvals import Verdict

        if self.approve is None:
            return None
        approve = self.approve

        def ask(request: Any) -> Any:
            self.sink(ev.ToolAwaitingApproval(call.id, call.name))
            asked = time.monotonic()
            answer: Any = False
            try:
                answer = approve(request)
                return answer
            finally:
                wait = time.monotonic() - asked
                waited[0] += wait
                # The user's think time is not silence from the model or a tool.
                self.touch()
                self.sink(ev.ToolApprovalAnswered(call.id, Verdict.of(answer).approved, wait))

        return ask

    def result(
        self, call: ToolCall, result: ToolResult, duration: float, *, announce: bool = True
    ) -> None:
        """The one path of every tool result: redacted, kept, and shown."""
        # What is stored, shown and sent next is redacted the way errors are (a `cat .env`,
        # an `env`) (H5).
        output = self.redact(result.output)
        message = Message(
            "tool",
            output,
            tool_call_id=call.id,
            name=call.name,
            images=list(getattr(result, "images", ())),
        )
        declined = bool(getattr(result, "declined", False))
        # Kept for the transcript of a resumed session (ok, error or declined, how long the
        # call itself took); providers only ever see the content (display metadata never
        # reaches a payload, D1).
        # A diff shows file contents: redacted like the output it stands beside (H5).
        display = _redacted(getattr(result, "display", None) or {}, self.redact)
        if message.images:
            # The block shows each image as a chip (G4), live as on resume (the row keeps
            # the same references, Message.to_row).
            display[IMAGES_KEY] = [image.ref() for image in message.images]
        message.display_metadata = {
            "ok": bool(result.ok),
            "outcome": ToolOutcome.of(result.ok, declined).value,
            "duration": round(duration, 3),
            **display,
        }
        self.keep(message)
        if announce:
            self.sink(
                ev.ToolFinished(
                    call.id, call.name, result.ok, output, duration, declined, display=display
                )
            )


def _redacted(value: Any, redact: Callable[[str], str]) -> Any:
    """`value` with every string in it (nested dicts and lists too) redacted."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: _redacted(item, redact) for key, item in value.items()}
    if isinstance(value, list):
        return [_redacted(item, redact) for item in value]
    return value
