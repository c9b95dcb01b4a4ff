"""The plan workflow through the real SDKs over real HTTP (N1): in plan mode a write is refused
and the model proposes a plan; approving switches the mode and the next turn writes; "keep
planning" sends the user's note; the plan survives /compact word for word and a resume."""

from __future__ import annotations

import pytest

from agent import events as ev
from agent.modes import PLAN_NO_CHANGES
from agent.plans import APPROVED, KEEP_PLANNING, PLAN_KEY, PLAN_MODE_PROMPT, TOOL_NAME
from agent.tools.approvals import Verdict

LONG = "A long explanation of the code base. " * 200
PLAN = "## Plan\n\n1. Write `notes.txt` with `hello`.\n2. Check it with `cat notes.txt`.\n"


def call(call_id: str, name: str, **arguments) -> dict:
    return {"tool_calls": [{"id": call_id, "name": name, "arguments": arguments}]}


def write(call_id: str = "w1") -> dict:
    return call(call_id, "write_file", path="notes.txt", content="hello\n")


class PlanAnswers:
    """An approver that answers each plan with the next verdict and records the requests."""

    def __init__(self, *verdicts: Verdict) -> None:
        self.verdicts = list(verdicts)
        self.asked: list = []

    def __call__(self, request):
        self.asked.append(request)
        if request.plan:
            return self.verdicts.pop(0)
        return Verdict(True)


def tool_results(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m.get("role") == "tool"]


def offered(body: dict) -> list[str]:
    return [tool["function"]["name"] for tool in body.get("tools", [])]


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_a_refused_write_then_an_approved_plan_then_the_next_turn_writes(harness, wire):
    """N1: in plan mode the write is refused with a sentence, the model proposes a plan, the
    user approves it into auto-edit, and the next turn's write lands on disk."""
    answers = PlanAnswers(Verdict(True, mode="auto-edit"))
    harness.start(
        {
            "replies": [
                write("w1"),
                call("p1", TOOL_NAME, plan=PLAN),
                {"text": "Approved; on it."},
                write("w2"),
                {"text": "Wrote notes.txt."},
            ]
        },
        wire=wire,
        agent={"approval": "plan"},
    )
    agent = harness.agent(approve=answers)
    first = agent.run_turn("add a notes file")
    assert first.status == "ok", first.error
    assert not (harness.workspace / "notes.txt").exists()
    assert [r.plan for r in answers.asked] == [True]
    assert answers.asked[0].detail == PLAN.strip("\n")
    assert agent.approval_mode == "auto-edit"
    bodies = harness.bodies()
    # The first request offered propose_plan and told the model how plan mode works.
    assert PLAN_MODE_PROMPT in str(bodies[0].get("system") or bodies[0]["messages"][0])
    # What the model read (either wire's shape): the refusal, then the approval.
    assert PLAN_NO_CHANGES in str(bodies[1]["messages"])
    assert APPROVED.split(" (")[0].format(mode="auto-edit") in str(bodies[2]["messages"])
    if wire == "openai":
        assert TOOL_NAME in offered(bodies[0])
    second = agent.run_turn("go ahead")
    assert second.status == "ok", second.error
    assert (harness.workspace / "notes.txt").read_text() == "hello\n"
    # Out of plan mode, propose_plan is no longer offered nor the plan prompt sent.
    last = harness.bodies()[-1]
    assert PLAN_MODE_PROMPT not in str(last.get("system") or last["messages"][0])
    if wire == "openai":
        assert TOOL_NAME not in offered(last)


def test_keep_planning_sends_the_note_and_stays_in_plan_mode(harness):
    """N1: "keep planning" with a note: the model reads the note as the tool's result and the
    session stays in plan mode; the stored row keeps the plan and the answer."""
    answers = PlanAnswers(Verdict(False, reason="also cover the README"))
    harness.start(
        {"replies": [call("p1", TOOL_NAME, plan=PLAN), {"text": "Revising."}]},
        agent={"approval": "plan"},
    )
    agent = harness.agent(approve=answers)
    result = agent.run_turn("plan it")
    assert result.status == "ok", result.error
    assert agent.approval_mode == "plan"
    sent = tool_results(harness.bodies()[-1])
    assert sent == [KEEP_PLANNING.format(note="also cover the README")]
    rows = harness.rows(result.session_id)
    kept = next(r for r in rows if r["role"] == "tool")["display_metadata"][PLAN_KEY]
    assert kept == {
        "text": PLAN.strip("\n"),
        "answer": "keep planning",
        "mode": "",
        "note": "also cover the README",
    }
    finished = [e for e in harness.events if isinstance(e, ev.ToolFinished)]
    assert finished[-1].display[PLAN_KEY]["text"] == PLAN.strip("\n")


@pytest.mark.parametrize("approve", [None, lambda _request: True], ids=["nobody", "plain-yes"])
def test_no_approver_shows_the_plan_and_ends_the_turn(harness, approve):
    """N1: with nobody to answer (headless), the plan is the turn's answer and no further
    model call is made; a plain yes (`--yes`) does not leave plan mode either."""
    harness.start(
        {"replies": [call("p1", TOOL_NAME, plan=PLAN), {"text": "never asked for"}]},
        agent={"approval": "plan"},
    )
    agent = harness.agent(approve=approve)
    result = agent.run_turn("plan it")
    assert result.status == "ok" and result.text == PLAN.strip("\n")
    assert len(harness.server.requests) == 1
    assert agent.approval_mode == "plan"


def test_propose_plan_outside_plan_mode_is_refused(harness):
    """N1: a model that calls propose_plan in another mode is told, in one sentence, why not."""
    harness.start(
        {"replies": [call("p1", TOOL_NAME, plan=PLAN), {"text": "ok"}]},
        agent={"approval": "auto-edit"},
    )
    result = harness.agent().run_turn("plan it")
    assert result.status == "ok"
    assert tool_results(harness.bodies()[-1]) == [
        "Refused: propose_plan is for plan mode only; the session is in auto-edit mode."
    ]


def test_the_plan_survives_compact_word_for_word_and_a_resume(harness):
    """N1: /compact summarises the conversation but carries the latest plan verbatim into the
    compacted context; a resumed session has it too (its row and the summary)."""
    answers = PlanAnswers(Verdict(False, reason="wait"))
    harness.start(
        {
            "replies": [
                call("p1", TOOL_NAME, plan=PLAN),
                {"text": "Will revise. " + LONG},
                {"text": "More. " + LONG},
                {"text": "Even more."},
                {"text": "A short summary that paraphrases everything."},
                {"text": "Resumed."},
            ]
        },
        agent={"approval": "plan"},
        compression={"protect_first": 1, "keep_recent": 2},
    )
    agent = harness.agent(approve=answers)
    first = agent.run_turn("plan it")
    agent.run_turn("and more")
    agent.run_turn("and even more")
    compacted = agent.compact()
    assert compacted.ok, compacted
    visible = "\n".join(m.content for m in agent.messages if not m.is_display)
    assert PLAN.strip("\n") in visible
    other = harness.agent(approve=answers)
    other.resume(first.session_id)
    resumed = "\n".join(m.content for m in other.messages if not m.is_display)
    assert PLAN.strip("\n") in resumed
    result = other.run_turn("go on")
    assert result.status == "ok", result.error
    sent = "\n".join(str(m.get("content")) for m in harness.bodies()[-1]["messages"])
    assert PLAN.strip("\n") in sent
