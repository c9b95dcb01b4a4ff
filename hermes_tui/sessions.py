"""Sessions from the app's side: the panel's list, resuming, a new session, search (D3)."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agent import events as ev
from hermes_tui.doors import Notices, RunsWorkers, ShowsScreens, agent_of, started, store_of
from hermes_tui.safe_text import has_hidden
from hermes_tui.welcome_facts import welcome_facts

if TYPE_CHECKING:
    from agent.config import Config
    from agent.loop import Agent
    from hermes_tui.gc_pacing import GcPacing
    from hermes_tui.keys import KeyMap
    from hermes_tui.modes import ModeController
    from hermes_tui.probes import Probes
    from hermes_tui.status import StatusPresenter
    from hermes_tui.turns import TurnController
    from hermes_tui.widgets.composer import Composer
    from hermes_tui.widgets.sessions_panel import SessionsPanel
    from hermes_tui.widgets.transcript import Transcript
    from storage.db import SessionDB
    from storage.rows import SessionRow

SEARCH_LIMIT = 50
SESSIONS_PAGE = 200
"""Sessions the panel loads at once; reaching its end loads as many again."""
INTERRUPTED = (
    "This session's last turn did not finish (hermes-tui stopped mid-turn): "
    "/continue picks it up where it stopped."
)


class SessionsHost(Notices, RunsWorkers, ShowsScreens, Protocol):
    """What the sessions use of the app: the agent and the store (after the start), its
    folder, the panel, the transcript, the status and the turns (none may run meanwhile)."""

    config: Config
    agent: Agent | None
    db: SessionDB | None
    workspace: Path
    probes: Probes
    status: StatusPresenter
    turns: TurnController
    modes: ModeController
    keys: KeyMap
    gc_pacing: GcPacing

    @property
    def sessions_panel(self) -> SessionsPanel:
        """The sessions panel widget."""
        ...

    @property
    def transcript(self) -> Transcript:
        """The transcript widget."""
        ...

    @property
    def composer(self) -> Composer:
        """The composer widget."""
        ...

    def show_panel(self, name: str, shown: bool = True) -> None:
        """Show (or hide) panel `name` until the next resize."""
        ...

    async def ready(self) -> None:
        """Wait until the store and the agent are up."""
        ...


class SessionsController:
    """Keeps the sessions panel, the agent's session and the transcript in step."""

    def __init__(self, app: SessionsHost) -> None:
        self.app = app
        self._told: set[str] = set()  # read failures already shown, each once
        self.listed: list[SessionRow] = []
        """The sessions the panel lists, newest first (what `/resume` completes to)."""
        self.wanted = SESSIONS_PAGE
        """How many sessions the panel loads: a page more each time the user reaches its end."""

    @property
    def _agent(self) -> Agent:
        return agent_of(self.app)

    @property
    def _db(self) -> SessionDB:
        return store_of(self.app)

    def routes(self) -> Iterable[tuple[type, Callable[[Any], Coroutine[Any, Any, None]]]]:
        """A turn that starts may have created its session: the list shows it (see EventRouter)."""
        yield ev.TurnStarted, lambda _event: self.refresh()

    async def refresh(self) -> None:
        """Reload the sessions panel from the database (a failed read keeps the old list)."""
        from storage.errors import StorageError, sentence

        app = self.app
        try:
            sessions = await self._db.list_sessions(limit=self.wanted)
            # Only a full page can have left sessions out: then count them (one cheap query).
            stored = await self._db.count_sessions() if len(sessions) >= self.wanted else 0
        except StorageError as exc:
            reason = sentence(exc)
            if reason not in self._told:
                self._told.add(reason)
                await app.notice(reason, "error")
            return
        self.listed = list(sessions)
        older = max(stored - len(sessions), 0)
        app.sessions_panel.show(sessions, self._agent.session_id, app.probes.now(), older=older)

    async def load_older(self) -> None:
        """The user reached the panel's end: load the next page of older sessions."""
        self.wanted = len(self.listed) + SESSIONS_PAGE
        await self.refresh()

    async def new(self) -> None:
        """Start a fresh session; the next turn creates it."""
        app = self.app
        self._agent.new_session()
        await app.transcript.clear()
        await app.transcript.show_welcome(welcome_facts(app))
        app.status.show_usage()
        app.status.set_state("idle")
        await self.refresh()

    def resume_choices(self) -> list[str]:
        """What `/resume` completes to: each session's title where it finds that session
        (the newest title holding it), else its id; the current session is left out."""
        current = self.app.agent.session_id if self.app.agent is not None else None
        choices = []
        for position, session in enumerate(self.listed):
            if session["id"] == current:
                continue
            title = session.get("title") or ""
            plain = " ".join(title.split()) == title and not has_hidden(title)
            newer = self.listed[:position]
            unique = plain and title and not any(title in (s.get("title") or "") for s in newer)
            choices.append(title if unique else session["id"])
        return choices

    async def find(self, ref: str) -> SessionRow | None:
        """The stored session `ref` names: an id, an id prefix or a title."""
        return await self._db.find_session(ref)

    async def resume(self, session_id: str) -> None:
        """Show exactly what was persisted for `session_id` and continue it (D3)."""
        app = self.app
        if await app.turns.refused("switch sessions"):
            return
        app.gc_pacing.hold()  # no collection between the resume and its paint
        try:
            await self._open(session_id)
        finally:
            app.gc_pacing.settle()  # one collection once the view is built and idle

    async def _open(self, session_id: str) -> None:
        app = self.app
        await self._db.flush()
        session = await self._db.get_session(session_id)
        if session is None:
            await app.notice("That session no longer exists.", "error")
            return
        rows = await self._db.load_messages(session_id)
        # The stored totals go with it: the agent counts on from them (one source, U1).
        self._agent.attach_session(session_id, rows, session)
        provider = session.get("provider")
        if provider in app.config.providers and session.get("model"):
            self._agent.model_ref = f"{provider}:{session['model']}"
        # The Markdown near the view is built once the resume has done its own work.
        with app.transcript.window.fill.held():
            await app.transcript.open_history()
            app.status.show_usage()
            app.status.show_model()
            app.status.set_state("idle")
            await app.modes.restore(session)  # the mode kept with it (N1)
            await self.refresh()
            app.composer.focus()
        if self._agent.interrupted:
            await app.notice(INTERRUPTED, "warning")
        await self._check_workspace(session)

    async def _check_workspace(self, session: SessionRow) -> None:
        """A session from another folder: ask whether its tools run there or here (item 6)."""
        from agent.config import tilde
        from hermes_tui.screens.workspace import THERE, WorkspaceScreen

        app = self.app
        stored = session.get("workspace")
        if not stored or Path(stored) == app.workspace:
            return
        there, here = Path(stored), app.workspace
        if not there.is_dir():
            gone = f"{tilde(there)}, where this session worked, no longer exists: "
            await self._stay(session["id"], gone + f"its tools run here, in {tilde(here)}.")
            return

        async def answered(where: str | None) -> None:
            if where == THERE:
                self.use_workspace(there)
                await app.notice(f"Tools now run in {tilde(there)}, this session's folder.")
            else:
                await self._stay(session["id"], f"This session continues here, in {tilde(here)}.")

        title = str(session.get("title") or "This session")
        await app.push_screen(WorkspaceScreen(title, tilde(there), tilde(here)), answered)

    async def _stay(self, session_id: str, sentence: str) -> None:
        """The session continues in this window's folder, recorded as its folder from now on."""
        app = self.app
        await self._db.update_session(session_id, workspace=str(app.workspace))
        await app.notice(sentence, "warning")
        await self.refresh()

    def use_workspace(self, folder: Path) -> None:
        """The app and its agent work in `folder` from now on."""
        app = self.app
        app.workspace = folder.resolve()
        self._agent.use_workspace(app.workspace)
        app.sessions_panel.workspace = str(app.workspace)

    async def resume_picked(self, session_id: str) -> None:
        """Resume a session the user picked in the panel; storage trouble is a sentence."""
        from storage.errors import StorageError, sentence

        try:
            await self.resume(session_id)
        except StorageError as exc:
            await self.app.notice(sentence(exc), "error")

    async def rename(self, title: str) -> None:
        """Give the current session a new title."""
        await self._db.update_session(started(self._agent.session_id, "session"), title=title)
        await self.refresh()

    # -- the panel ---------------------------------------------------------------------------
    async def focus_list(self) -> None:
        """Show and focus the sessions list."""
        self.app.show_panel("sessions")
        await self.refresh()
        self.app.sessions_panel.option_list.focus()

    async def open_search(self) -> None:
        """Show the sessions panel and focus its search box."""
        self.app.show_panel("sessions")
        await self.app.sessions_panel.open_search()

    def search(self, query: str) -> None:
        """Search every session's messages; a newer query cancels the older search."""
        self.app.run_worker(
            self._search(query), group="search", exclusive=True, exit_on_error=False
        )

    async def _search(self, query: str) -> None:
        """The sessions whose messages match `query`, each once with its best snippet, into the
        sessions panel."""
        await self.app.ready()
        panel = self.app.sessions_panel
        try:
            hits = await self._db.search_sessions(query, limit=SEARCH_LIMIT)
        except Exception as exc:
            panel.show_hits(query, [], error=f"search failed: {exc}")
            return
        panel.show_hits(query, hits)
