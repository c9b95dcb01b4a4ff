"""One MCP server: its connection task on the MCP loop, its state, tools, prompts and calls.

The connection is one long task that enters the transport and the SDK `Client`, lists the
tools and prompts, then waits for a signal: stop, the server's stdout closed (it exited),
or a list changed. Every exit of that task ends in a state the panel shows: `failed` with a
sentence (and the stderr's last line), or `stopped` / `disabled` when we ended it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import warnings
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from agent.mcp.settings import McpConfigProblem, McpServerConfig, expand
from agent.mcp.stdio import StderrTail, StdioCommand, stdio_transport
from agent.models import tokens_for_chars
from agent.text_cuts import cut_with_ellipsis

log = logging.getLogger("hermes_tui.mcp")

MAX_TOOLS = 512
"""Tools kept per server; a server listing more gets a note and only the first ones."""
MAX_SCHEMA_CHARS = 64_000
"""A tool whose input schema is larger than this is left out, with a note."""
MAX_DESCRIPTION_CHARS = 2_000
MAX_PAGES = 50
"""List pages followed per list: a server whose cursor never ends cannot hang a refresh."""
PING_SECONDS = 5.0
LIST_REFRESH_GAP = 1.0
"""Seconds between two refreshes of one list (the first change is picked up at once)."""
LIST_SETTLE_SECONDS = 2.0
"""How long a call's result waits for a list change the server told during the call."""
CLIENT_NAME = "hermes-tui"


class State(StrEnum):
    """Where a server is: the /mcp panel's first column."""

    STARTING = "starting"
    READY = "ready"
    FAILED = "failed"
    DISABLED = "disabled"  # for this session, by the user
    OFF = "off"  # `enabled: false` in config.yaml
    NEEDS_CONSENT = "needs consent"  # a project server the user has not allowed yet
    STOPPED = "stopped"


@dataclass(frozen=True)
class McpTool:
    """One tool of a server as the registry sees it."""

    server: str
    name: str
    wire: str
    description: str
    schema: dict[str, Any]
    annotations: dict[str, Any] = field(default_factory=dict)

    @functools.cached_property
    def tokens(self) -> int:
        """Estimated tokens of its full schema in a request (measured once)."""
        return tokens_for_chars(len(self.wire) + len(self.description) + _json_len(self.schema))

    @property
    def read_only(self) -> bool:
        """The server's own claim (readOnlyHint): shown to the user, never trusted alone."""
        return bool(self.annotations.get("readOnlyHint"))


@dataclass(frozen=True)
class McpPrompt:
    """One prompt of a server: a slash command `/mcp:<server>:<name>`."""

    server: str
    name: str
    description: str
    arguments: tuple[tuple[str, bool], ...] = ()
    """(name, required) in the server's order."""


def _json_len(value: Any) -> int:
    try:
        return len(json.dumps(value))
    except (TypeError, ValueError):
        return 0


class ServerExited(Exception):
    """The server's stdout closed while we were using it."""


class ServerConnection:
    """A server's connection task and everything the rest of the app reads about it.

    Written on the MCP loop, read from any thread: every public field is replaced whole.
    """

    def __init__(
        self,
        config: McpServerConfig,
        *,
        workspace: Path,
        startup_timeout: float,
        on_change: Callable[[ServerConnection], None],
        assign_names: Callable[[ServerConnection, list[str]], dict[str, str]],
    ) -> None:
        self.config = config
        self.name = config.name
        self.workspace = workspace
        self.startup_timeout = startup_timeout
        self.state = State.STOPPED
        self.error = ""
        self.notes: tuple[str, ...] = ()
        self.tools: tuple[McpTool, ...] = ()
        self.prompts: tuple[McpPrompt, ...] = ()
        self.server_info = ""
        self.tail = StderrTail()
        self.generation = 0
        """Bumped whenever the tools change: a registry snapshot knows when it is stale."""
        self._on_change = on_change
        self._assign = assign_names
        self._client: Any = None
        self._task: asyncio.Task[None] | None = None
        self._signals: asyncio.Queue[str] | None = None
        self._pending: set[str] = set()
        self._told: dict[str, int] = {}
        """list_changed notifications received, per list; `_applied`: those refreshed."""
        self._applied: dict[str, int] = {}
        self._expected_end = False

    @property
    def transport(self) -> str:
        """stdio or http."""
        return self.config.transport

    @property
    def schema_tokens(self) -> int:
        """Estimated tokens of all its tools' schemas."""
        return sum(tool.tokens for tool in self.tools)

    @property
    def running(self) -> bool:
        """True while its task runs (starting or ready)."""
        return self._task is not None and not self._task.done()

    # -- life --------------------------------------------------------------------------------
    def mark_starting(self) -> None:
        """Show the server as starting before its task is scheduled (any thread)."""
        self.error = ""
        self._set(State.STARTING)

    def start(self) -> None:
        """Start the connection task (on the MCP loop)."""
        if self.running:
            return
        self.tail = StderrTail()
        self.error, self.notes = "", ()
        self._expected_end = False
        self._signals = asyncio.Queue()
        self._pending = set()
        self._told, self._applied = {}, {}
        if self.state != State.STARTING:
            self._set(State.STARTING)
        loop = asyncio.get_running_loop()
        self._task = loop.create_task(self._run(), name=f"mcp:{self.name}")
        loop.call_later(self.startup_timeout, self._startup_expired, self._task)

    async def stop(self, state: State = State.STOPPED) -> None:
        """End the connection (the server process with it) and settle in `state`."""
        task = self._task
        self._expected_end = True
        if task is not None and not task.done():
            if self._client is None:
                task.cancel()  # still starting: nothing to wind down politely
            else:
                self._signal("stop")
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError, Exception):
                await asyncio.wait_for(asyncio.shield(task), 3.0)
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await asyncio.wait_for(task, 2.0)
        self._fail_or(state)

    def _startup_expired(self, task: asyncio.Task[None]) -> None:
        if task is self._task and self.state == State.STARTING and not task.done():
            self.error = f"did not finish starting within {self.startup_timeout:g} s"
            task.cancel()

    def _signal(self, what: str) -> None:
        if self._signals is not None and what not in self._pending:
            self._pending.add(what)
            self._signals.put_nowait(what)

    async def _run(self) -> None:
        from mcp import Client, Implementation

        from agent.version import VERSION

        try:
            async with AsyncExitStack() as stack:
                transport = await self._transport(stack)
                client = Client(
                    transport,
                    mode="legacy",  # the initialize handshake every server speaks
                    message_handler=self._on_message,
                    client_info=Implementation(name=CLIENT_NAME, version=VERSION),
                    cache=None,
                )
                await stack.enter_async_context(client)
                info = client.server_info
                self.server_info = f"{info.name} {info.version}".strip() if info else ""
                await self._list_tools(client)
                await self._list_prompts(client)
                self._client = client
                self._set(State.READY)
                await self._serve(client)
        except asyncio.CancelledError:
            if not self._expected_end:
                self.error = self.error or "was cancelled"
                # The process is gone (the stack closed it): its last stderr words may still
                # be in the pipe, and the failure names them.
                await self._stderr_drained()
                self._set(State.FAILED)
            raise
        except Exception as exc:  # a server's failure is a state, never a crash
            if not self._expected_end and self.state != State.FAILED:
                self.error = self.error or self._failure(exc)
                await self._stderr_drained()
                self._set(State.FAILED)
        finally:
            self._client = None

    async def _stderr_drained(self, seconds: float = 0.5) -> None:
        """Wait (at most `seconds`) until the server's stderr has been read to its end."""
        if self.transport != "stdio":
            return
        deadline = asyncio.get_running_loop().time() + seconds
        while not self.tail.closed and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.01)

    def _failure(self, exc: BaseException) -> str:
        exc = _root(exc)
        lost = isinstance(exc, ServerExited) or _connection_lost(exc)
        if lost and self.transport == "stdio":
            return "exited while starting" if self.state == State.STARTING else "exited"
        if lost:
            return "closed the connection"
        return describe_failure(exc)

    async def _serve(self, client: Any) -> None:
        """Wait for signals until stopped; a closed stdout fails the server.

        A list refresh runs at most once per LIST_REFRESH_GAP: a flood of list_changed is a
        few refreshes, never one tools/list (and one status event) per notification, while
        a stop or an exit is still handled at once.
        """
        assert self._signals is not None
        loop = asyncio.get_running_loop()
        due: dict[str, float] = {}
        last: dict[str, float] = {}
        # One getter kept across waits: a timed-out wait never cancels a get that already
        # took a signal (a lost "closed" would leave a dead server shown as ready).
        getter: asyncio.Future[str] | None = None
        try:
            while True:
                getter = getter or asyncio.ensure_future(self._signals.get())
                wait = max(0.0, min(due.values()) - loop.time()) if due else None
                done, _ = await asyncio.wait({getter}, timeout=wait)
                what, getter = (getter.result(), None) if done else ("", getter)
                if what:
                    self._pending.discard(what)
                    if what == "stop":
                        return
                    if what == "closed":
                        raise ServerExited
                    soonest = last.get(what, -LIST_REFRESH_GAP) + LIST_REFRESH_GAP
                    due.setdefault(what, max(loop.time(), soonest))
                for name in [n for n, at in due.items() if at <= loop.time()]:
                    del due[name]
                    await self._refresh(client, name)
                    last[name] = loop.time()
        finally:
            if getter is not None:
                getter.cancel()

    async def _refresh(self, client: Any, what: str) -> None:
        told = self._told.get(what, 0)
        try:
            if what == "tools":
                await self._list_tools(client)
            elif what == "prompts":
                await self._list_prompts(client)
        except Exception as exc:  # a failed refresh keeps the last list
            log.warning("MCP server %s: refreshing its %s failed: %s", self.name, what, exc)
        self._applied[what] = told
        self._on_change(self)

    async def _lists_settled(self) -> None:
        """Wait (bounded) until the tool list changes told so far are applied: a tool that
        adds tools has them in the next model call of the same turn."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + LIST_SETTLE_SECONDS
        while self._told.get("tools", 0) != self._applied.get("tools", 0):
            if loop.time() >= deadline or self.state != State.READY:
                return
            await asyncio.sleep(0.01)

    async def _transport(self, stack: AsyncExitStack) -> Any:
        config = self.config
        try:
            if config.transport == "http":
                return await self._http(stack)
            spec = StdioCommand(
                command=expand(config.command),
                args=tuple(expand(arg) for arg in config.args),
                env=_server_env(config),
                cwd=str(self._cwd()),
            )
        except McpConfigProblem as exc:
            raise RuntimeError(str(exc)) from None
        return stdio_transport(spec, self.tail, self._stdout_closed)

    def _stdout_closed(self, reason: str) -> None:
        """The server's stdout ended, or was given up for `reason` (a line without end)."""
        if reason and not self.error:
            self.error = reason
        self._signal("closed")

    def _cwd(self) -> Path:
        folder = self.config.cwd
        if not folder:
            return self.workspace
        path = Path(os.path.expanduser(expand(folder)))
        return path if path.is_absolute() else self.workspace / path

    async def _http(self, stack: AsyncExitStack) -> Any:
        from mcp.client.streamable_http import streamable_http_client

        from agent.mcp.http import SSE_EVENT_LIMIT, bounded_client

        headers = {key: expand(value) for key, value in self.config.headers}
        client = bounded_client(headers)
        await stack.enter_async_context(client)
        return streamable_http_client(
            expand(self.config.url), http_client=client, max_sse_event_size=SSE_EVENT_LIMIT
        )

    async def _on_message(self, message: Any) -> None:
        method = getattr(getattr(message, "root", message), "method", "")
        what = {
            "notifications/tools/list_changed": "tools",
            "notifications/prompts/list_changed": "prompts",
        }.get(method)
        if what:
            self._told[what] = self._told.get(what, 0) + 1
            self._signal(what)

    # -- lists -------------------------------------------------------------------------------
    async def _list_tools(self, client: Any) -> None:
        listed = await _all_pages(client.list_tools, "tools")
        tools, notes = _checked_tools(self.name, listed)
        names = self._assign(self, [tool.name for tool in tools])
        self.tools = tuple(
            McpTool(
                server=self.name,
                name=tool.name,
                wire=names[tool.name],
                description=cut_with_ellipsis(
                    tool.description or tool.title or "", MAX_DESCRIPTION_CHARS
                ),
                schema=tool.input_schema,
                annotations=_annotations(tool),
            )
            for tool in tools
        )
        self.notes = tuple(notes)
        self.generation += 1

    async def _list_prompts(self, client: Any) -> None:
        capabilities = client.server_capabilities
        if capabilities is None or capabilities.prompts is None:
            self.prompts = ()
            return
        listed = await _all_pages(client.list_prompts, "prompts")
        self.prompts = tuple(
            McpPrompt(
                server=self.name,
                name=prompt.name,
                description=cut_with_ellipsis(prompt.description or "", MAX_DESCRIPTION_CHARS),
                arguments=tuple((arg.name, bool(arg.required)) for arg in prompt.arguments or ()),
            )
            for prompt in listed[:MAX_TOOLS]
        )

    # -- calls -------------------------------------------------------------------------------
    async def call_tool(self, name: str, arguments: dict[str, Any], timeout: float) -> Any:
        """Call `name`; the SDK's CallToolResult (RuntimeError when the server is not ready)."""
        client = self._client
        if client is None or self.state != State.READY:
            raise RuntimeError(f"MCP server {self.name} is {self.state}")
        from mcp.shared.exceptions import MCPError
        from mcp_types import REQUEST_TIMEOUT

        try:
            result = await client.call_tool(name, arguments, read_timeout_seconds=timeout)
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                raise TimeoutError from None  # the SDK's deadline and ours are one
            if _connection_lost(exc):
                await self._lost(exc)
            raise
        except Exception as exc:
            if _connection_lost(exc):
                await self._lost(exc)
            raise
        await self._lists_settled()
        return result

    async def _lost(self, exc: BaseException) -> None:
        """The connection died under a call: failed now, so the next request is without its
        tools, with the stderr's last words (the pipe closes with the process)."""
        await self._stderr_drained()
        if self.state == State.READY:
            self.error = self._failure(exc)
            self._set(State.FAILED)
        self._signal("closed")
        raise RuntimeError(f"the server {self.error}") from None

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> Any:
        """The messages of prompt `name` filled with `arguments`."""
        client = self._client
        if client is None or self.state != State.READY:
            raise RuntimeError(f"MCP server {self.name} is {self.state}")
        return await client.get_prompt(name, arguments)

    async def check_alive(self) -> bool:
        """Ping the server; one that does not answer in PING_SECONDS is failed and stopped."""
        client = self._client
        if client is None:
            return False
        try:
            with warnings.catch_warnings():
                # Deprecated only for the 2026 protocol; we speak the handshake one.
                warnings.simplefilter("ignore")
                await asyncio.wait_for(client.send_ping(), PING_SECONDS)
            return True
        except Exception:
            self.error = f"stopped answering (no reply to a ping within {PING_SECONDS:g} s)"
            await self.stop(State.FAILED)
            return False

    # -- state -------------------------------------------------------------------------------
    def _set(self, state: State) -> None:
        if state == State.FAILED:
            last = self.tail.last_line()
            if last and last not in self.error:
                self.error = f"{self.error or 'failed'} (stderr: {last})"
            if not self.error:
                self.error = "failed"
        if state != State.READY:
            self._client = None
        self.state = state
        log.info("MCP server %s: %s %s", self.name, state, self.error)
        self._on_change(self)

    def _fail_or(self, state: State) -> None:
        """After a stop: the given state, unless the stop came from a failure (ping)."""
        if state == State.FAILED or self.state != State.FAILED or not self._expected_end:
            self._set(state)

    def settle(self, state: State, error: str = "") -> None:
        """Put a server that is not running in `state` (off, needs consent, ...)."""
        self.error = error
        self.tools, self.prompts = (), ()
        self.generation += 1
        self._set(state)


def _server_env(config: McpServerConfig) -> dict[str, str]:
    """The SDK's safe base environment (no provider keys: H5) plus the configured `env`."""
    from mcp.client.stdio import get_default_environment

    env = get_default_environment()
    for name in ("LANG", "LC_ALL", "TMPDIR", "XDG_RUNTIME_DIR"):
        if os.environ.get(name):
            env[name] = os.environ[name]
    env.update({key: expand(value) for key, value in config.env})
    return env


def _checked_tools(server: str, listed: list[Any]) -> tuple[list[Any], list[str]]:
    """The tools worth offering, and a note for each group left out (hostile lists)."""
    notes: list[str] = []
    if len(listed) > MAX_TOOLS:
        notes.append(f"lists {len(listed)}+ tools; only the first {MAX_TOOLS} are used")
        listed = listed[:MAX_TOOLS]
    kept: list[Any] = []
    seen: set[str] = set()
    for tool in listed:
        if tool.name in seen:
            notes.append(f"lists the tool {tool.name!r} twice; the first is used")
            continue
        seen.add(tool.name)
        size = _json_len(tool.input_schema)
        if size > MAX_SCHEMA_CHARS:
            notes.append(
                f"tool {tool.name!r} left out: its schema is {size:,} characters "
                f"(limit {MAX_SCHEMA_CHARS:,})"
            )
            continue
        kept.append(tool)
    return kept, notes


def _annotations(tool: Any) -> dict[str, Any]:
    annotations = getattr(tool, "annotations", None)
    if annotations is None:
        return {}
    data = annotations.model_dump(by_alias=True, exclude_none=True)
    return {k: v for k, v in data.items() if isinstance(v, bool | str) and k != "title"}


def _connection_lost(exc: BaseException) -> bool:
    """The connection is gone (a closed stdio pipe, an HTTP server that went away)."""
    import httpx2
    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED

    if isinstance(exc, httpx2.TransportError):
        return True
    return isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED


async def _all_pages(fetch: Any, field: str) -> list[Any]:
    """A paginated list (`tools`, `prompts`), page after page: at most MAX_PAGES pages, and
    no page more once MAX_TOOLS items are in (a server that pages forever ends here)."""
    listed: list[Any] = []
    cursor = None
    for _ in range(MAX_PAGES):
        page = await fetch(cursor=cursor)
        listed.extend(getattr(page, field))
        cursor = page.next_cursor
        if not cursor or len(listed) > MAX_TOOLS:
            break
    return listed


def _root(exc: BaseException) -> BaseException:
    """The first real exception inside task-group exception groups."""
    while isinstance(exc, BaseExceptionGroup):
        inner = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        if not inner:
            break
        exc = inner[0]
    return exc


def describe_failure(exc: BaseException) -> str:
    """One phrase for why a server failed (it follows the server's name)."""
    exc = _root(exc)
    if isinstance(exc, ServerExited):
        return "closed the connection"
    if isinstance(exc, FileNotFoundError):
        return f"cannot start: {exc.filename or 'the command'} was not found"
    if isinstance(exc, PermissionError):
        return f"cannot start: {exc.filename or 'the command'} is not executable"
    if isinstance(exc, OSError):
        return f"cannot start: {exc.strerror or exc}"
    if _connection_lost(exc):
        return "closed the connection"
    text = str(exc).strip() or type(exc).__name__
    name = type(exc).__name__
    if "Connect" in name or "connect" in text.lower():
        return f"cannot connect: {cut_with_ellipsis(text, 200)}"
    if name in ("RuntimeError", "MCPError"):
        return cut_with_ellipsis(text, 300)
    return f"{name}: {cut_with_ellipsis(text, 300)}"
