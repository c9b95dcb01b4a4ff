"""Subagents (G1): the `task` tool's source and what one call does.

A `task` call hands its prompt to a child agent (`Agent.child`) of the chosen type: its own
context and session (stored as a child of this one), the type's tools and model, the same
approvals dialog (each question naming the subagent), stopped with its parent. Its events
become `SubagentProgress` for the call's block; its final answer, cut to `RESULT_CAP`, is the
call's result. The types are read again at each turn's start.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agent import events as ev
from agent.agent_types import SUBAGENT_TOOL, AgentType, LoadedTypes, load_agent_types
from agent.kinds import CallPurpose, TurnStatus
from agent.text_cuts import cut_at_line_end
from agent.tools.registry import Tool, ToolContext, ToolError, ToolResult, one_line
from agent.tools.task import DESCRIPTION_WIDTH, task_tool

if TYPE_CHECKING:
    from agent.loop import Agent
    from agent.ports import ApprovalPolicy
    from agent.providers.base import UsagePart
    from agent.tools.registry import ToolRegistry
    from agent.turn_endings import TurnResult

RESULT_CAP = 16_000
"""A subagent's answer is cut here (at a line end): the point is a short report."""
RESULT_CUT = "\n[The subagent's answer was cut at {cap:,} characters.]"
STOPPED = "Cancelled: the user stopped the turn, and the subagent with it."
NO_ANSWER = "The subagent finished without an answer."


def subagent_prompt(kind: AgentType, workspace: str) -> str:
    """A subagent's base system prompt: its type's, then where it works and who reads it."""
    return (
        f"{kind.prompt}\n\nYou work in the user's repository at {workspace}; paths are "
        "relative to it. You were started by another agent with one job: your last message "
        "is all it receives, so end with the complete answer."
    )


def with_task(registry: ToolRegistry, agent: Agent) -> ToolRegistry:
    """`registry` with the `task` tool of `agent` (a top-level agent's registry)."""
    registry.add_source(Subagents(agent))
    return registry


def child_of(parent: Agent, registry: ToolRegistry | None, model: str | None) -> Agent:
    """`Agent.child`: a second agent in `parent`'s world, with a session of its own."""
    from agent.loop import Agent

    child = Agent(
        parent.config,
        parent.store,
        parent.sink,
        workspace=parent.workspace,
        approve=parent.approve,
        registry=registry or parent.registry.subset(parent.registry.names(), SUBAGENT_TOOL),
    )
    child.parent = parent
    child.model_ref = model or parent.model_ref
    child.approval_mode = parent.approval_mode  # a subagent of a plan changes nothing either
    child.approvals = parent.approvals  # "always" was said to the user's session
    child.permissions = parent.permissions
    if child.checkpointer is not None:
        child.checkpointer.close()
    child.checkpointer, child.owns_checkpoints = parent.checkpointer, False
    return child


class Subagents:
    """The `task` tool, as a tool source of a top-level agent: its types are read per turn."""

    def __init__(self, agent: Agent) -> None:
        self._agent = agent
        self._types: LoadedTypes | None = None
        self._told: set[str] = set()
        self._lock = threading.Lock()

    @property
    def types(self) -> LoadedTypes:
        """The agent types as last read (read now if they never were)."""
        with self._lock:
            if self._types is None:
                self._types = load_agent_types(self._agent.workspace, self._agent.config.home)
            return self._types

    def tool(self, name: str) -> Tool | None:
        """The `task` tool, or None for any other name."""
        return task_tool(self.types, self.run) if name == SUBAGENT_TOOL else None

    def names(self) -> list[str]:
        """Its one tool's name."""
        return [SUBAGENT_TOOL]

    def schemas(self) -> list[dict[str, Any]]:
        """The `task` schema, its description naming the types there are."""
        tool = task_tool(self.types, self.run)
        return [{"name": tool.name, "description": tool.description, "parameters": tool.parameters}]

    def begin_turn(self, sink: Callable[[Any], None], stopped: Callable[[], bool]) -> None:
        """Read the types again (a file may have been added); say once why one was skipped."""
        with self._lock:
            self._types = load_agent_types(self._agent.workspace, self._agent.config.home)
            skipped = [line for line in self._types.skipped if line not in self._told]
            self._told.update(skipped)
        for line in skipped:
            sink(ev.Notice(line, "warning"))

    def run(self, ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        """One `task` call: run the subagent to its end; its answer is the result."""
        types = self.types
        name = str(args.get("agent_type") or "explore")
        kind = types.find(name)
        if kind is None:
            raise ToolError(
                f"task: there is no agent type {name!r}; there are: {', '.join(types.names)}."
            )
        prompt = str(args.get("prompt") or "").strip()
        if not prompt:
            raise ToolError(
                "task needs a `prompt`: the whole job, written for someone who has seen nothing."
            )
        description = one_line(str(args.get("description") or prompt), DESCRIPTION_WIDTH)
        parent = self._agent
        registry = parent.registry.subset(kind.tools, SUBAGENT_TOOL)
        if not registry.names():
            raise ToolError(
                f"task: none of the {kind.name} type's tools ({', '.join(kind.tools)}) is here."
            )
        child = parent.child(registry, kind.model)
        child.system_prompt = subagent_prompt(kind, str(parent.workspace))
        progress = Progress(parent.sink, ctx.call_id, kind.name, description, child, parent.touch)
        child.sink = progress.see
        child.approve = naming(parent.approve, kind.name, description)
        child.expect_turn()  # a stop passed on before the turn starts still stops it
        try:
            with parent.control.passing_stop_to(child.stop):
                if child.control.stopped:
                    # Stopped before it began: it did nothing, so it leaves no session row.
                    return ToolResult(
                        False, STOPPED, display=progress.display(str(TurnStatus.STOPPED))
                    )
                child.ensure_session(description)  # titled by its job, linked to this session
                progress.session_id = child.session_id
                result = child.run_turn(prompt)
        finally:
            child.close()
        return outcome(result, kind, description, progress)


class Progress:
    """A subagent's events as its block sees them: what it runs, how many calls, tokens."""

    def __init__(
        self,
        sink: ev.Sink,
        call_id: str,
        kind: str,
        description: str,
        child: Agent,
        touch: Callable[[], None],
    ) -> None:
        self._sink = sink
        self._child = child
        self._touch = touch
        self.call_id, self.kind, self.description = call_id, kind, description
        self.tool_calls = 0
        self.tool = ""
        """The summary of the last tool call it made (the one it runs, or ran last)."""
        self.session_id: str | None = None

    @property
    def tokens(self) -> int:
        """The subagent's tokens so far (its prompts and outputs)."""
        usage = self._child.usage
        return usage.input_tokens + usage.output_tokens

    def see(self, event: ev.AgentEvent) -> None:
        """Turn one of the subagent's events into progress; the rest stay its own."""
        self._touch()  # the subagent's work is the parent turn's liveness too (L1)
        if isinstance(event, ev.ToolStarted):
            self.tool_calls += 1
            self.tool = event.summary
            self.tell()
        elif isinstance(event, ev.ToolFinished | ev.UsageUpdated | ev.TurnStarted):
            self.tell()

    def tell(self) -> None:
        """Send the block's state now."""
        self._sink(
            ev.SubagentProgress(
                self.call_id,
                self.kind,
                self.description,
                self.tool,
                self.tool_calls,
                self.tokens,
                self.session_id,
            )
        )

    def display(self, status: str) -> dict[str, Any]:
        """What the result's row keeps for the block of a resumed transcript."""
        return {
            "subagent": {
                "type": self.kind,
                "description": self.description,
                "session_id": self.session_id,
                "tool_calls": self.tool_calls,
                "tokens": self.tokens,
                "status": status,
            }
        }


def naming(approve: ApprovalPolicy | None, kind: str, description: str) -> ApprovalPolicy | None:
    """The parent's approver, each question naming the subagent that asks it."""
    if approve is None:
        return None
    who = f"the {kind} subagent ({description})"
    return lambda request: approve(replace(request, subagent=who))


def outcome(
    result: TurnResult, kind: AgentType, description: str, progress: Progress
) -> ToolResult:
    """The `task` call's result from the subagent's turn."""
    text = (result.text or "").strip()
    if len(text) > RESULT_CAP:
        text = cut_at_line_end(text, RESULT_CAP).rstrip() + RESULT_CUT.format(cap=RESULT_CAP)
    display = progress.display(str(result.status))
    if result.status == TurnStatus.OK:
        return ToolResult(True, text or NO_ANSWER, display=display)
    if result.status == TurnStatus.STOPPED:
        return ToolResult(False, STOPPED, display=display)
    why = result.error or f"it ended {result.status}"
    partial = f"\n\nIts answer so far:\n{text}" if text else ""
    return ToolResult(
        False, f"The {kind.name} subagent did not finish: {why}{partial}", display=display
    )


def record_child_usage(child: Agent, parent: Agent, usage: UsagePart) -> None:
    """A subagent's call: its parent session's (stored once, there, so no sum over sessions
    counts it twice, and counted in its totals), and in the subagent's own for its block."""
    name = child.provider_name
    parent.usage_recorder.record(
        usage,
        provider_name=name,
        provider=parent.config.provider(name),
        model=child.model_name,
        session_id=parent.session_id,
        writer=parent.writer,
        sink=parent.sink,
        purpose=CallPurpose.SUBAGENT,
    )
    child.usage_recorder.count(usage, None)
    totals = child.usage
    child.sink(
        ev.UsageUpdated(
            usage.input_tokens,
            usage.output_tokens,
            totals.input_tokens,
            totals.output_tokens,
            estimated=usage.estimated,
            purpose=CallPurpose.SUBAGENT,
        )
    )
