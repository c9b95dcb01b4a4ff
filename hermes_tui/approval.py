"""Asking the user about a tool call: from the worker thread to the dialog and back (A4)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_tui.app import HermesApp


class ApprovalFlow:
    """The agent's approval callback: shows the dialog and hands back the user's Verdict.

    The agent remembers an "always" answer itself; here every question gets one answer, and
    a question still open when the app goes is answered no.
    """

    def __init__(self, app: HermesApp) -> None:
        self.app = app
        self._pending: set[asyncio.Future[Any]] = set()

    @property
    def waiting(self) -> bool:
        """True while a question waits for the user (the turn is not silent, it waits)."""
        return bool(self._pending)

    def approve(self, request: Any) -> Any:
        """Ask the user; called on the worker thread, which blocks until the answer."""
        return self.app.call_from_thread(self._ask, request)

    async def _ask(self, request: Any) -> Any:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
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

    async def _show(self, request: Any, future: asyncio.Future[Any]) -> None:
        # Not on the start-up path.
        from agent.tools.approvals import Verdict
        from hermes_tui.screens.approval import APPROVAL_ARM_SECONDS, ApprovalScreen

        def answered(verdict: Verdict | None) -> None:
            if not future.done():
                future.set_result(verdict or Verdict(False))

        self.app.status.set_state("waiting for approval", request.tool)
        self.app.notifier.approval_waiting(request.tool)
        probes = self.app.probes
        arm_seconds = probes.approval_arm_seconds
        screen = ApprovalScreen(
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
