"""The ACP agent: initialize, sessions (new, load, list), prompt, cancel, modes and models,
over the SDK's connection on our stdio transport (E1).

File and shell work stays with the app's own tools, confined by the workspace and the
sandbox: the editor's terminal and file capabilities would run commands and writes outside
bubblewrap and outside our protected-path checks, so they are not asked for.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any, cast

import acp
from acp import RequestError
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SessionCapabilities,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionInfo,
    SessionListCapabilities,
    SessionMode,
    SessionModeState,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
)

from agent.config import Config
from agent.kinds import ApprovalMode
from agent.version import VERSION
from hermes_tui.acp.client_mcp import client_servers
from hermes_tui.acp.prompt_text import prompt_text
from hermes_tui.acp.replay import replayed
from hermes_tui.acp.session import AcpSession

MODEL_OPTION = "model"
MODE_NAMES = {
    ApprovalMode.ASK: "Ask",
    ApprovalMode.AUTO_EDIT: "Auto-edit",
    ApprovalMode.PLAN: "Plan",
    ApprovalMode.YOLO: "Yolo",
}


def unknown_session(session_id: str) -> RequestError:
    """The error for a request about a session this process does not hold."""
    return RequestError(
        -32602, f"No session {session_id!r} here: start one with session/new or session/load."
    )


class HermesAcpAgent:
    """hermes-tui behind the ACP `Agent` interface: one AcpSession per client session."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.conn: Any = None
        self.sessions: dict[str, AcpSession] = {}

    def on_connect(self, conn: Any) -> None:
        """The SDK hands us the connection to the client."""
        self.conn = conn

    async def initialize(self, protocol_version: int, **_: Any) -> InitializeResponse:
        """Our capabilities: sessions load and list; text and embedded context in prompts;
        the client's MCP servers over stdio and HTTP."""
        return InitializeResponse(
            protocol_version=min(protocol_version, acp.PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True),
                session_capabilities=SessionCapabilities(list=SessionListCapabilities()),
            ),
            agent_info=Implementation(name="hermes-tui", title="hermes-tui", version=VERSION),
        )

    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, **_: Any
    ) -> NewSessionResponse:
        """A new stored session working in the client's `cwd`, with the client's MCP servers."""
        session = await self._open(cwd, mcp_servers, resume=None)
        return NewSessionResponse(
            session_id=session.id or "",
            modes=self._modes(session),
            config_options=self._options(session),
        )

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **_: Any
    ) -> LoadSessionResponse:
        """A stored session (TUI, headless or an editor's), its history replayed as updates."""
        if session_id in self.sessions:
            await self.sessions.pop(session_id).close()
        session = await self._open(cwd, mcp_servers, resume=session_id)
        agent = session.agent
        rows = await asyncio.to_thread(agent.writer.load_messages, session.id)
        todos = agent.state.todos.to_json() if agent.state.todos is not None else []
        for update in replayed(rows, session.workspace, agent.registry.summary, todos):
            await self.conn.session_update(session_id=session.id, update=update)
        return LoadSessionResponse(
            modes=self._modes(session), config_options=self._options(session)
        )

    async def list_sessions(self, cwd: str | None = None, **_: Any) -> ListSessionsResponse:
        """The stored sessions, newest first (in `cwd` only, when given)."""
        import datetime

        from hermes_tui.store import open_store

        db = await open_store(self.config)
        try:
            rows = await db.list_sessions(limit=200)
        finally:
            await db.close()
        infos = []
        for row in rows:
            where = str(row.get("workspace") or "")
            if cwd is not None and where != str(Path(cwd).resolve()):
                continue
            stamp = row.get("updated_at")
            when = (
                datetime.datetime.fromtimestamp(stamp, datetime.UTC).isoformat()
                if isinstance(stamp, int | float)
                else None
            )
            infos.append(
                SessionInfo(
                    session_id=row["id"], cwd=where, title=row.get("title") or None, updated_at=when
                )
            )
        return ListSessionsResponse(sessions=infos)

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> PromptResponse:
        """Run a turn (or queue or steer it, T1); its stop reason and the tokens it used."""
        session = self._session(session_id)
        text = prompt_text(prompt, session.workspace)
        usage = session.agent.usage
        before = (usage.input_tokens, usage.output_tokens)
        reason = await session.prompt(text)
        spent_in = max(0, usage.input_tokens - before[0])
        spent_out = max(0, usage.output_tokens - before[1])
        return PromptResponse(
            # One of STOP_REASONS' values (acp/session.py), carried through a Future[str].
            stop_reason=reason,  # type: ignore[arg-type]
            usage=acp.schema.Usage(
                input_tokens=spent_in, output_tokens=spent_out, total_tokens=spent_in + spent_out
            ),
        )

    async def cancel(self, session_id: str, **_: Any) -> None:
        """session/cancel: the running turn stops as Esc stops it."""
        session = self.sessions.get(session_id)
        if session is not None:
            session.cancel()

    async def set_session_mode(
        self, mode_id: str, session_id: str, **_: Any
    ) -> SetSessionModeResponse:
        """Switch the approval mode (N1); the next tool batch uses it."""
        from agent.modes import parse_mode, switch_mode

        session = self._session(session_id)
        mode = parse_mode(mode_id)
        if mode is None:
            names = ", ".join(str(m) for m in ApprovalMode)
            raise RequestError(-32602, f"No mode called {mode_id!r}; the modes are {names}.")
        await asyncio.to_thread(switch_mode, session.agent, str(mode))
        session.mode = str(mode)
        return SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **_: Any
    ) -> SetSessionConfigOptionResponse:
        """Switch the session's model (the one option offered)."""
        from agent.config import ConfigError

        session = self._session(session_id)
        if config_id != MODEL_OPTION or not isinstance(value, str):
            raise RequestError(
                -32602, f"No option {config_id!r}: the one option is {MODEL_OPTION!r}."
            )
        try:
            await asyncio.to_thread(session.agent.set_model, value)
        except (ConfigError, ValueError) as exc:
            raise RequestError(-32602, str(exc)) from None
        return SetSessionConfigOptionResponse(config_options=self._options(session))

    async def authenticate(self, method_id: str, **_: Any) -> None:
        """No sign-in: keys come from config.yaml and the environment."""
        raise RequestError(
            -32602, f"No authentication method {method_id!r}: set keys in config.yaml."
        )

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """No extensions."""
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        """Extension notifications are ignored (JSON-RPC answers no notification)."""

    async def close(self) -> None:
        """Stop every session's turn and close its runtime (the client went)."""
        sessions, self.sessions = list(self.sessions.values()), {}
        await asyncio.gather(*(session.close() for session in sessions), return_exceptions=True)

    # -- helpers ----------------------------------------------------------------------------
    async def _open(
        self, cwd: str, mcp_servers: list[Any] | None, resume: str | None
    ) -> AcpSession:
        workspace = Path(cwd).expanduser()
        if not workspace.is_absolute() or not workspace.is_dir():
            raise RequestError(-32602, f"cwd must be an absolute path to a folder, not {cwd!r}.")
        extra = client_servers(mcp_servers or [])
        config = dataclasses.replace(self.config, mcp_servers={**self.config.mcp_servers, **extra})
        session = AcpSession(self.conn, workspace.resolve())
        try:
            await session.start(config, resume=resume)
        except LookupError as exc:
            await session.close()
            raise RequestError(-32602, str(exc).strip("'\"")) from None
        except BaseException:
            await session.close()
            raise
        assert session.id is not None
        self.sessions[session.id] = session
        return session

    def _session(self, session_id: str) -> AcpSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise unknown_session(session_id)
        return session

    def _modes(self, session: AcpSession) -> SessionModeState:
        from agent.modes import SUMMARIES

        return SessionModeState(
            current_mode_id=str(session.agent.approval_mode),
            available_modes=[
                SessionMode(id=str(mode), name=MODE_NAMES[mode], description=SUMMARIES[mode])
                for mode in ApprovalMode
            ],
        )

    def _options(self, session: AcpSession) -> list[Any]:
        from hermes_tui.completion.models import configured_refs

        current = session.agent.model_ref
        refs = list(dict.fromkeys(configured_refs(self.config, current)))
        return [
            SessionConfigOptionSelect(
                type="select",
                id=MODEL_OPTION,
                name="Model",
                category="model",
                current_value=current,
                options=[SessionConfigSelectOption(value=ref, name=ref) for ref in refs],
            )
        ]


async def serve(config: Config) -> None:
    """Serve the ACP agent on stdin and stdout until the client closes its end."""
    from acp.agent.connection import AgentSideConnection

    from hermes_tui.acp.transport import StdioTransport

    reader, writer = await acp.stdio_streams(limit=50 * 1024 * 1024)
    agent = HermesAcpAgent(config)
    # The SDK calls each method by keyword with the request's fields; ours take the fields they
    # use and `**_` for the rest, which the Protocol's full signatures do not admit.
    conn = AgentSideConnection(
        cast("acp.Agent", agent), StdioTransport(reader, writer), listening=False
    )
    try:
        await conn.listen()
    finally:
        await agent.close()
        await conn.close()
