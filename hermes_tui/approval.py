"""Asking the user about a tool call: from the worker thread to the dialog and back (A4)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from hermes_tui.doors import ShowsScreens

if TYPE_CHECKING:
    from agent.tools.approvals import Verdict
    from agent.tools.registry import ApprovalRequest
    from hermes_tui.bridge import Bridge
    from hermes_tui.modes import ModeController
    from hermes_tui.notify import Notifier
    from hermes_tui.probes import Probes
    from hermes_tui.status import StatusPresenter
    from hermes_tui.widgets.composer import Composer


class ApprovalHost(ShowsScreens, Protocol):
    """What the approval flow uses of the app: its loop from the worker thread, the event
    bridge (flushed before the dialog), the status, the composer and the test probes."""

    bridge: Bridge
    probes: Probes
    status: StatusPresenter
    notifier: Notifier
    modes: ModeController

    @property
    def composer(self) -> Composer:
        """The composer (the dialog hands focus back to it)."""
        ...

    def call_from_thread(self, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:  # noqa: V107
        """Run `callback` on the app's loop; block this (other) thread for its result."""
        ...

    def call_later(self, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> bool:  # noqa: V107
        """Run `callback` on the app's loop after the messages already queued."""
        ...


class ApprovalFlow:
    """The agent's approval callback: shows the dialog and hands back the user's Verdict.

    The agent remembers an "always" answer itself; here every question gets one answer, and
    a question still open when the app goes is answered no.
    """

    def __init__(self, app: ApprovalHost) -> None:
        self.app = app
        self._pending: set[asyncio.Future[Verdict]] = set()

    @property
    def waiting(self) -> bool:
        """True while a question waits for the user (the turn is not silent, it waits)."""
        return bool(self._pending)

    def approve(self, request: ApprovalRequest) -> Verdict:
        """Ask the user; called on the worker thread, which blocks until the answer."""
        verdict: Verdict = self.app.call_from_thread(self._ask, request)
        return verdict

    async def _ask(self, request: ApprovalRequest) -> Verdict:
        future: asyncio.Future[Verdict] = asyncio.get_running_loop().create_future()
        self._pending.add(future)
        # Through the app's queue behind the buffered events, so the tool block that asks
        # is on screen under the dialog.
        self.app.bridge.flush()
        self.app.call_later(self._show, request, future)
        try:
            return await future
        finally:
            self._pending.discard(future)
            self.app.status.set_state("working")

    async def _show(self, request: ApprovalRequest, future: asyncio.Future[Verdict]) -> None:
        # Not on the start-up path.
        from agent.kinds import ApprovalMode
        from agent.tools.approvals import Verdict
        from hermes_tui.screens.approval import APPROVAL_ARM_SECONDS, ApprovalScreen
        from hermes_tui.screens.plan import PlanScreen

        def answered(verdict: Verdict | None) -> None:
            if verdict is not None and request.plan and verdict.approved and verdict.mode:
                # An approved plan leaves plan mode through the mode switch: the status and
                # a notice show it; the agent's next tool batch runs in it (N1).
                self.app.call_later(self.app.modes.adopt, ApprovalMode(verdict.mode))
            if not future.done():
                future.set_result(verdict or Verdict(False))

        self.app.status.set_state("waiting for approval", request.tool)
        self.app.notifier.approval_waiting(request.tool)
        probes = self.app.probes
        arm_seconds = probes.approval_arm_seconds
        kind = PlanScreen if request.plan else ApprovalScreen
        screen = kind(
            request,
            arm_seconds=APPROVAL_ARM_SECONDS if arm_seconds is None else arm_seconds,
            clock=probes.approval_clock,
            composer=self.app.composer,
        )
        await self.app.push_screen(screen, callback=answered)

    def decline_all(self) -> None:
        """Answer every open question no (the app is going away)."""
        if not self._pending:
            return
        from agent.tools.approvals import Verdict

        for future in self._pending:
            if not future.done():
                future.set_result(Verdict(False))
