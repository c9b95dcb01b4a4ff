"""Approvals as `session/request_permission`: our ApprovalRequest's choices as ACP options,
the client's pick as our Verdict (E1). Protected paths offer no "always" (H3)."""

from __future__ import annotations

from typing import Any

from acp.schema import PermissionOption

from agent.kinds import ApprovalMode
from agent.tools.approvals import Verdict
from agent.tools.registry import ApprovalRequest

ONCE, ALWAYS, REJECT = "allow-once", "allow-always", "reject"
PLAN_ASK, PLAN_AUTO_EDIT = "plan-ask", "plan-auto-edit"


def options_for(request: ApprovalRequest) -> list[PermissionOption]:
    """Allow once, allow always (when the request offers an "always" scope), reject; a plan
    (N1) is approved into ask or auto-edit mode, or kept in planning."""
    if request.plan:
        return [
            PermissionOption(option_id=PLAN_ASK, name="Approve the plan (ask)", kind="allow_once"),
            PermissionOption(
                option_id=PLAN_AUTO_EDIT, name="Approve the plan (auto-edit)", kind="allow_always"
            ),
            PermissionOption(option_id=REJECT, name="Keep planning", kind="reject_once"),
        ]
    options = [PermissionOption(option_id=ONCE, name="Allow once", kind="allow_once")]
    if request.always is not None and not request.protected:
        options.append(
            PermissionOption(option_id=ALWAYS, name=request.always.describe(), kind="allow_always")
        )
    options.append(PermissionOption(option_id=REJECT, name="Reject", kind="reject_once"))
    return options


def verdict_of(response: Any, request: ApprovalRequest) -> Verdict:
    """The client's answer as a Verdict; anything but an offered allow is a no."""
    outcome = getattr(response, "outcome", None)
    picked = getattr(outcome, "option_id", None)
    offered = {option.option_id for option in options_for(request)}
    if getattr(outcome, "outcome", None) != "selected" or picked not in offered:
        return Verdict(False)
    if picked == PLAN_ASK:
        return Verdict(True, mode=str(ApprovalMode.ASK))
    if picked == PLAN_AUTO_EDIT:
        return Verdict(True, mode=str(ApprovalMode.AUTO_EDIT))
    if picked == ONCE:
        return Verdict(True)
    if picked == ALWAYS:
        return Verdict(True, always=True)
    return Verdict(False)
