"""Sessions from the app's side: the panel's list, resuming, a new session, search (D3)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent import events as ev
from hermes_tui.safe_text import has_hidden
from hermes_tui.startup import welcome_facts

if TYPE_CHECKING:
    from hermes_tui.app import HermesApp

SEARCH_LIMIT = 50
INTERRUPTED = (
    "This session's last turn did not finish (hermes-tui stopped mid-turn): "
    "/continue picks it up where it stopped."
)


class SessionsController:
    """Keeps the sessions panel, the agent's session and the transcript in step."""

    def __init__(self, app: HermesApp) -> None:
        self.app = app
        self._told: set[str] = set()  # read failures already shown, each once
        self.listed: list[dict[str, Any]] = []
        """The sessions the panel lists, newest first (what `/resume` completes to)."""

    def routes(self) -> Iterable[tuple[type, Any]]:
        """A turn that starts may have created its session: the list shows it (see EventRouter)."""
        yield ev.TurnStarted, lambda _event: self.refresh()

    async def refresh(self) -> None:
        """Reload the sessions panel from the database (a failed read keeps the old list)."""
        from storage.errors import StorageError, sentence

        app = self.app
        try:
            sessions = await app.db.list_sessions()
        except StorageError as exc:
            reason = sentence(exc)
            if reason not in self._told:
                self._told.add(reason)
                await app.notice(reason, "error")
            return
        self.listed = list(sessions)
        app.sessions_panel.show(sessions, app.agent.session_id, app.probes.now())

    async def new(self) -> None:
        """Start a fresh session; the next turn creates it."""
        app = self.app
        app.agent.new_session()
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

    async def find(self, ref: str) -> dict[str, Any] | None:
        """The stored session `ref` names: an id, an id prefix or a title."""
        return await self.app.db.find_session(ref)

    async def resume(self, session_id: str) -> None:
        """Show exactly what was persisted for `session_id` and continue it (D3)."""
        app = self.app
        if await app.turns.refused("switch sessions"):
            return
        await app.db.flush()
        session = await app.db.get_session(session_id)
        if session is None:
            await app.notice("That session no longer exists.", "error")
            return
        rows = await app.db.load_messages(session_id)
        # The stored totals go with it: the agent counts on from them (one source, U1).
        app.agent.attach_session(session_id, rows, session)
        provider = session.get("provider")
        if provider in app.config.providers and session.get("model"):
            app.agent.model_ref = f"{provider}:{session['model']}"
        await app.transcript.open_history()
        app.status.show_usage()
        app.status.show_model()
        app.status.set_state("idle")
        await self.refresh()
        app.composer.focus()
        if app.agent.interrupted:
            await app.notice(INTERRUPTED, "warning")
        await self._check_workspace(session)

    async def _check_workspace(self, session: dict[str, Any]) -> None:
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
        await app.db.update_session(session_id, workspace=str(app.workspace))
        await app.notice(sentence, "warning")
        await self.refresh()

    def use_workspace(self, folder: Path) -> None:
        """The app and its agent work in `folder` from now on."""
        app = self.app
        app.workspace = folder.resolve()
        app.agent.use_workspace(app.workspace)
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
        await self.app.db.update_session(self.app.agent.session_id, title=title)
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
        """Every session's messages matching `query`, newest first, into the sessions panel."""
        await self.app.ready()
        panel = self.app.sessions_panel
        try:
            hits = await self.app.db.search(query, limit=SEARCH_LIMIT)
        except Exception as exc:
            panel.show_hits(query, [], error=f"search failed: {exc}")
            return
        panel.show_hits(query, hits)
