"""The approval mode from the app's side: shift+Tab, `/mode`, yolo's confirmation, and the
mode a resumed session comes back in (N1)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from agent.kinds import ApprovalMode
from agent.modes import MODE_KEY, SUMMARIES, next_in_cycle, stored_mode, switch_mode
from hermes_tui.doors import Notices, ShowsScreens, started

if TYPE_CHECKING:
    from agent.config import Config
    from agent.loop import Agent
    from hermes_tui.keys import KeyMap
    from hermes_tui.status import StatusPresenter
    from hermes_tui.widgets.transcript import Transcript

YOLO_KEPT = (
    "This session ran in yolo mode; it resumes in {mode} (yolo is turned on again only on "
    "purpose: /mode yolo)."
)


class ModesHost(Notices, ShowsScreens, Protocol):
    """What the mode switch uses of the app: the config's mode, the agent (after the start),
    the keys (to name the mode key), the status and the yolo dialog."""

    config: Config
    agent: Agent | None
    keys: KeyMap
    status: StatusPresenter

    @property
    def transcript(self) -> Transcript:
        """The transcript (its welcome names the mode)."""
        ...


class ModeController:
    """Switches the agent's approval mode and shows it (status panel, status line, notice)."""

    def __init__(self, app: ModesHost) -> None:
        self.app = app

    @property
    def current(self) -> ApprovalMode:
        """The mode tool calls run under now (the config's until the agent is up)."""
        agent = self.app.agent
        if agent is None:
            return ApprovalMode(self.app.config.agent.approval)
        return agent.approval_mode

    async def cycle(self) -> None:
        """The mode key: ask -> auto-edit -> plan -> ask (yolo only by `/mode yolo`)."""
        await self.switch(next_in_cycle(self.current))

    async def switch(self, mode: ApprovalMode) -> None:
        """Use `mode` from the next tool batch on; yolo asks once to confirm."""
        if mode == self.current:
            await self.app.notice(f"Already in {mode} mode: {SUMMARIES[mode]}.")
            return
        if mode == ApprovalMode.YOLO:
            from hermes_tui.screens.yolo import YoloScreen  # not on the start-up path

            async def confirmed(yes: bool | None) -> None:
                if yes:
                    await self._set(mode)
                else:
                    await self.app.notice(f"Still in {self.current} mode.")

            await self.app.push_screen(YoloScreen(), confirmed)
            return
        await self._set(mode)

    async def adopt(self, mode: ApprovalMode) -> None:
        """Switch to `mode` (ask or auto-edit) because the user approved a plan (N1)."""
        await self._set(mode)

    async def _set(self, mode: ApprovalMode) -> None:
        switch_mode(started(self.app.agent, "agent"), mode)
        self.show()
        key = self.app.keys.shown("mode.cycle")
        await self.app.notice(f"Now in {mode} mode: {SUMMARIES[mode]} ({key} or /mode switches).")

    async def restore(self, session: Mapping[str, Any]) -> None:
        """A resumed session comes back in the mode kept with it (yolo never: the config's)."""
        default = self.app.config.agent.approval
        kept = (session.get("metadata") or {}).get(MODE_KEY)
        mode = stored_mode(session.get("metadata"), default)
        switch_mode(started(self.app.agent, "agent"), mode)
        self.show()
        if kept == ApprovalMode.YOLO and mode != ApprovalMode.YOLO:
            await self.app.notice(YOLO_KEPT.format(mode=mode), "warning")

    def show(self) -> None:
        """The status panel and line, and a welcome on screen, say the mode now."""
        self.app.status.show_mode(self.current)
        self.app.transcript.welcome_mode(str(self.current))
