"""The plan workflow of plan mode (N1): the `propose_plan` tool, the user's answer to a plan,
and the latest plan found in a conversation (which compaction carries word for word)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent.kinds import ApprovalMode
from agent.modes import SUMMARIES
from agent.tools.approvals import REASON_MAX_CHARS, Verdict
from agent.tools.registry import ApprovalRequest, Tool, ToolContext, ToolError, ToolResult

if TYPE_CHECKING:
    from agent.messages import Message

TOOL_NAME = "propose_plan"
PLAN_KEY = "plan"
"""The display metadata key of a propose_plan result: {"text", "answer", "mode", "note"}."""

PLAN_MAX_CHARS = 40_000
"""A plan longer than this is refused: it is a plan, not the change itself."""

APPROVE_MODES = (ApprovalMode.ASK, ApprovalMode.AUTO_EDIT)
"""The modes approving a plan may switch to (never yolo: that is turned on on purpose)."""

PLAN_MODE_PROMPT = (
    "The session is in plan mode: no file may change and shell commands run read-only. "
    "Read, search and list to understand the task, then call propose_plan once with the "
    "plan in Markdown (the steps, the files each touches, how to check the result). Do not "
    "try to edit files; the user approves the plan and switches mode to let you carry it out."
)
"""Added to the system prompt while the session is in plan mode (N1)."""

DESCRIPTION = (
    "Propose your plan to the user, in Markdown, when planning is done (plan mode only). "
    "The user approves it (and you may then carry it out), or asks you to keep planning "
    "with a note, which is this tool's result."
)

NOT_IN_PLAN_MODE = "Refused: propose_plan is for plan mode only; the session is in {mode} mode."
EMPTY_PLAN = "Refused: the plan is empty; write it in Markdown in the 'plan' argument."
TOO_LONG = f"Refused: the plan is over {PLAN_MAX_CHARS} characters; shorten it to the steps."
APPROVED = (
    "The user approved the plan and switched the session to {mode} mode ({summary}). "
    "Carry out the plan now, step by step."
)
KEEP_PLANNING = "The user wants you to keep planning (still in plan mode). Their note: {note}"
KEEP_PLANNING_NO_NOTE = (
    "The user did not approve the plan yet; the turn ends here. Wait for their next message."
)
SHOWN = (
    "The plan was shown to the user, who will answer it; nothing was changed. The turn ends here."
)


@dataclass(frozen=True)
class PlanAnswer:
    """How the user answered a plan: approved into `mode`, or kept planning with `note`."""

    answer: str  # "approved" | "keep planning" | "shown"
    mode: str = ""
    note: str = ""

    @classmethod
    def of(cls, verdict: Verdict | bool | None) -> PlanAnswer:
        """An approver's answer as a plan answer: only an answer naming a mode approves.

        A plain yes (`run --yes`, a script) names no mode, so it only shows the plan: no
        answer that was not the user's own choice leaves plan mode.
        """
        if verdict is None:
            return cls("shown")
        verdict = Verdict.of(verdict)
        if verdict.approved and verdict.mode in APPROVE_MODES:
            return cls("approved", mode=verdict.mode)
        if not verdict.approved:
            return cls("keep planning", note=" ".join(verdict.reason.split())[:REASON_MAX_CHARS])
        return cls("shown")


def plan_request(plan: str) -> ApprovalRequest:
    """What the front end asks about a plan: its text, with the plan choices."""
    return ApprovalRequest(TOOL_NAME, "the plan", plan, plan=True)


def propose_plan(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    """Show the plan to the user and give the model their answer (N1)."""
    if not ctx.read_only:
        raise ToolError(NOT_IN_PLAN_MODE.format(mode=ctx.approval_mode))
    plan = str(args["plan"]).strip("\n")
    if not plan.strip():
        raise ToolError(EMPTY_PLAN)
    if len(plan) > PLAN_MAX_CHARS:
        raise ToolError(TOO_LONG)
    answer = PlanAnswer.of(None if ctx.approve is None else ctx.approve(plan_request(plan)))
    display = {PLAN_KEY: {"text": plan, "answer": answer.answer, "mode": answer.mode}}
    if answer.answer == "approved":
        if ctx.switch_mode is not None:
            ctx.switch_mode(answer.mode)
        mode = ApprovalMode(answer.mode)
        return ToolResult(
            True, APPROVED.format(mode=mode, summary=SUMMARIES[mode]), display=display
        )
    if answer.answer == "keep planning" and answer.note:
        display[PLAN_KEY]["note"] = answer.note
        return ToolResult(True, KEEP_PLANNING.format(note=answer.note), display=display)
    # Shown only (headless, a plain yes) or dismissed without a note: the turn ends with the
    # plan as its answer, so `run --mode plan` prints it and nothing else runs.
    ctx.ended_by_plan = plan
    text = SHOWN if answer.answer == "shown" else KEEP_PLANNING_NO_NOTE
    return ToolResult(True, text, display=display)


TOOL = Tool(
    name=TOOL_NAME,
    description=DESCRIPTION,
    parameters={
        "type": "object",
        "properties": {
            "plan": {"type": "string", "description": "The plan, in Markdown."},
        },
        "required": ["plan"],
    },
    handler=propose_plan,
    kind="plan",
)


def offered(tool_name: str, mode: str) -> bool:
    """Whether the model is offered `tool_name` in `mode`: propose_plan only in plan mode."""
    return tool_name != TOOL_NAME or mode == ApprovalMode.PLAN


@dataclass(frozen=True)
class FoundPlan:
    """The latest plan of a conversation and how it was answered."""

    text: str
    answer: str


def latest_plan(messages: list[Message]) -> FoundPlan | None:
    """The last propose_plan result in `messages` (its plan and answer), or None."""
    for message in reversed(messages):
        if message.role != "tool" or message.name != TOOL_NAME:
            continue
        kept = (message.display_metadata or {}).get(PLAN_KEY)
        if isinstance(kept, dict) and isinstance(kept.get("text"), str):
            return FoundPlan(kept["text"], str(kept.get("answer") or "proposed"))
    return None


def carried_plan(messages: list[Message]) -> str:
    """The section a compaction summary ends with when `messages` held a plan: the latest
    plan word for word (a summary would paraphrase it), or ""."""
    found = latest_plan(messages)
    if found is None:
        return ""
    return f"[The latest plan ({found.answer}), word for word]\n{found.text}\n[End of the plan]"
