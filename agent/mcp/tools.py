"""MCP tools in the tool registry, and `mcp_tool_search` for when they would bloat a request.

The source is asked for its schemas on every model call, so a tool list that changed
(`notifications/tools/list_changed`), a server that failed or one that just became ready is
in the next request and never in the middle of one. When the MCP schemas together pass the
budget (`mcp.max_schema_tokens`, else 5 % of the model's window), the request carries only
`mcp_tool_search`, whose description lists every MCP tool by name and one line; the model
asks it for the tools it wants, and their full schemas join the requests for the rest of
the turn (M2).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agent import events as ev
from agent.mcp.connection import McpTool
from agent.mcp.loop import CallCancelled
from agent.mcp.projects import ProjectDecisionsError
from agent.mcp.results import result_images, result_text
from agent.mcp.settings import ToolSearch
from agent.models import DEFAULT_CONTEXT_WINDOW, tokens_for_chars
from agent.tools.registry import DETAIL_CAP, ApprovalRequest, Pending, Tool, ToolResult, one_line

if TYPE_CHECKING:
    from agent.mcp.manager import McpManager
    from agent.tools.registry import ToolContext

SEARCH_TOOL = "mcp_tool_search"
SEARCH_SHARE = 0.05
"""Without `mcp.max_schema_tokens`, MCP schemas may take this share of the model's window."""
SEARCH_HITS = 8
LINE_WIDTH = 100
STOPPED = "Cancelled: the user stopped the turn."


def one_line_description(text: str) -> str:
    """The first sentence or line of a description, cut for the search catalogue."""
    first = (text or "").strip().split("\n", 1)[0]
    sentence, dot, _ = first.partition(". ")
    return one_line(sentence + ("." if dot else ""), LINE_WIDTH)


def schema_of(tool: McpTool) -> dict[str, Any]:
    """The provider-neutral schema of an MCP tool (a copy the request may keep)."""
    parameters = tool.schema if isinstance(tool.schema, dict) else {}
    if parameters.get("type") != "object":
        parameters = {"properties": {}, **parameters, "type": "object"}
    return {
        "name": tool.wire,
        "description": tool.description,
        "parameters": json.loads(json.dumps(parameters)),
    }


class McpToolSource:
    """The registry's view of the MCP servers: their tools, approvals and tool search."""

    def __init__(
        self,
        manager: McpManager,
        *,
        window: Callable[[], int | None] = lambda: None,
        notify: Callable[[Any], None] | None = None,
    ) -> None:
        self.manager = manager
        self.window = window
        """The current model's context window (the agent's, None when unknown): the default
        budget is 5 % of it, or of what compaction assumes when nobody knows it."""
        self.notify = notify or manager.sink
        self.loaded: set[str] = set()
        """Tools the model loaded with mcp_tool_search in this turn."""

    # -- the budget ---------------------------------------------------------------------------
    @property
    def budget(self) -> int:
        """Tokens MCP schemas may take before they go behind tool search."""
        configured = self.manager.settings.max_schema_tokens
        if configured is not None:
            return configured
        return int((self.window() or DEFAULT_CONTEXT_WINDOW) * SEARCH_SHARE)

    def searching(self, tools: list[McpTool] | None = None) -> bool:
        """True when the next request carries tool search instead of every MCP schema."""
        mode = self.manager.settings.tool_search
        if mode == ToolSearch.NEVER:
            return False
        tools = self.manager.tools() if tools is None else tools
        if not tools:
            return False
        if mode == ToolSearch.ALWAYS:
            return True
        return sum(tool.tokens for tool in tools) > self.budget

    # -- the registry's questions ---------------------------------------------------------------
    def _by_wire(self) -> dict[str, McpTool]:
        return {tool.wire: tool for tool in self.manager.tools()}

    def names(self) -> list[str]:
        """Every MCP tool callable now (tool search's name too when it is on)."""
        tools = self.manager.tools()
        extra = [SEARCH_TOOL] if self.searching(tools) else []
        return extra + [tool.wire for tool in tools]

    def schemas(self) -> list[dict[str, Any]]:
        """The MCP part of the next request: all schemas, or search plus the loaded ones."""
        tools = self.manager.tools()
        if not self.searching(tools):
            return [schema_of(tool) for tool in tools]
        loaded = [tool for tool in tools if tool.wire in self.loaded]
        return [self._search_schema(tools), *(schema_of(tool) for tool in loaded)]

    def tool(self, name: str) -> Tool | None:
        """A registry Tool for `name` (search, or one MCP tool), built for this call."""
        if name == SEARCH_TOOL:
            tools = self.manager.tools()
            if not self.searching(tools):
                return None
            schema = self._search_schema(tools)
            return Tool(SEARCH_TOOL, schema["description"], schema["parameters"], self._search)
        mcp_tool = self._by_wire().get(name)
        if mcp_tool is None:
            return None
        return Tool(
            name=mcp_tool.wire,
            description=mcp_tool.description,
            parameters=mcp_tool.schema,
            handler=lambda ctx, args: self._handle(mcp_tool, ctx, args),
            kind="mcp",
            origin=(mcp_tool.server, mcp_tool.name),
        )

    def begin_turn(self, sink: Callable[[Any], None], stopped: Callable[[], bool]) -> None:
        """Forget last turn's loaded tools; wait (briefly) for servers still starting (M1)."""
        self.loaded = set()
        self.manager.wait_starting(self.manager.settings.turn_wait_seconds, stopped)

    # -- tool search ----------------------------------------------------------------------------
    def _catalogue(self, tools: list[McpTool]) -> str:
        """Every tool by name and one line; names alone, or each server's count, when even
        that list would pass the budget (a server with hundreds of tools)."""
        lines = "\n".join(
            f"- {tool.wire}: {one_line_description(tool.description)}" for tool in tools
        )
        if tokens_for_chars(len(lines)) <= self.budget:
            return f"Available MCP tools:\n{lines}"
        names = ", ".join(tool.wire for tool in tools)
        if tokens_for_chars(len(names)) <= self.budget:
            return f"Available MCP tools (too many to describe; use `query` to read more):\n{names}"
        counts: dict[str, int] = {}
        for tool in tools:
            counts[tool.server] = counts.get(tool.server, 0) + 1
        servers = ", ".join(f"{server} ({count} tools)" for server, count in counts.items())
        return (
            f"MCP servers (too many tools to list; find them with `query`): {servers}. "
            "Tool names are mcp__<server>__<tool>."
        )

    def _search_schema(self, tools: list[McpTool]) -> dict[str, Any]:
        description = (
            "Loads MCP tools so you can call them: their full schemas are sent from your next "
            "step on, for the rest of this task. Pass `names` (from the list below) or a "
            "`query` (words to look for in names and descriptions). "
            f"{self._catalogue(tools)}"
        )
        return {
            "name": SEARCH_TOOL,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {
                    "names": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Tool names from the list to load.",
                    },
                    "query": {"type": "string", "description": "Words to search for."},
                },
            },
        }

    def _search(self, _ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        tools = self._by_wire()
        wanted = [str(name) for name in args.get("names") or [] if isinstance(name, str | int)]
        found = [tools[name] for name in wanted if name in tools]
        unknown = [name for name in wanted if name not in tools]
        query = str(args.get("query") or "").strip()
        if query:
            found.extend(t for t in _matches(query, list(tools.values())) if t not in found)
        if not found:
            hint = f" Unknown: {', '.join(unknown[:10])}." if unknown else ""
            return ToolResult(False, f"No MCP tool matched.{hint} Pick names from the list.")
        self.loaded.update(tool.wire for tool in found)
        lines = [f"- {tool.wire}: {one_line_description(tool.description)}" for tool in found]
        note = f"\nNot found: {', '.join(unknown[:10])}." if unknown else ""
        return ToolResult(
            True,
            f"Loaded {len(found)} tool(s); call them from your next step:\n"
            + "\n".join(lines)
            + note,
        )

    # -- one call ---------------------------------------------------------------------------
    def _handle(
        self, tool: McpTool, ctx: ToolContext, args: dict[str, Any]
    ) -> ToolResult | Pending:
        self.loaded.add(tool.wire)  # called directly: its schema joins the next requests

        def run() -> ToolResult:
            return self._call(tool, ctx, args)

        server = self.manager.get(tool.server)
        if server is None:
            return ToolResult(False, f"MCP server {tool.server} is gone.")
        if server.config.trusts(tool.name) or self.manager.decisions.trusted(
            tool.server, tool.name
        ):
            return run()  # the user's own config or an "always for this project" (M2)
        return Pending(
            request=lambda: self._request(tool, server.config.describe(), args),
            commit=run,
            remember_project=lambda: self._trust_for_project(tool),
        )

    def _request(self, tool: McpTool, where: str, args: dict[str, Any]) -> ApprovalRequest:
        try:
            detail = json.dumps(args, indent=2, ensure_ascii=False)
        except (TypeError, ValueError):
            detail = str(args)
        if len(detail) > DETAIL_CAP:
            detail = detail[:DETAIL_CAP] + "\n[... cut ...]"
        claims = _claims(tool.annotations)
        note = f"MCP server {tool.server} ({one_line(where, 60)}), tool {tool.name}."
        if claims:
            note += f" The server says: {claims} (its own claim, not checked)."
        summary = one_line(f"{tool.wire} {json.dumps(args, ensure_ascii=False, default=str)}")
        return ApprovalRequest(
            tool=tool.wire, summary=summary, detail=detail, note=note, project=True
        )

    def _trust_for_project(self, tool: McpTool) -> None:
        try:
            self.manager.decisions.trust(tool.server, tool.name)
        except ProjectDecisionsError as exc:
            self.notify(ev.Notice(f"{exc} The approval holds for this session only.", "warning"))

    def _call(self, tool: McpTool, ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        manager = self.manager
        timeout = manager.timeout_for(tool.server)
        try:
            result = manager.call_tool(
                tool.server, tool.name, args, timeout=timeout, cancel=ctx.cancel
            )
        except CallCancelled:
            return ToolResult(False, STOPPED)
        except TimeoutError:
            manager.check_alive_later(tool.server)
            return ToolResult(
                False, f"{tool.wire} timed out after {timeout:g} s (MCP server {tool.server})."
            )
        except Exception as exc:  # the server's error is the model's to read (A4)
            return ToolResult(False, f"MCP server {tool.server}: {_error_text(exc)}")
        images, notes = result_images(result, tool.wire)
        text = "\n".join([result_text(result, ctx.output_cap), *notes])
        return ToolResult(not bool(result.is_error), text, images=images)


def _claims(annotations: dict[str, Any]) -> str:
    said = []
    if annotations.get("readOnlyHint"):
        said.append("read-only")
    if annotations.get("destructiveHint") is False:
        said.append("not destructive")
    elif annotations.get("destructiveHint"):
        said.append("destructive")
    if annotations.get("idempotentHint"):
        said.append("idempotent")
    if annotations.get("openWorldHint"):
        said.append("reaches outside systems")
    return ", ".join(said)


def _error_text(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return one_line(text, 500)


def _matches(query: str, tools: list[McpTool]) -> list[McpTool]:
    """Tools whose name or description holds every word of `query` (then any word)."""
    words = [w.lower() for w in query.split() if w]
    text = {tool.wire: f"{tool.wire} {tool.description}".lower() for tool in tools}
    every = [t for t in tools if all(w in text[t.wire] for w in words)]
    if every:
        return every[:SEARCH_HITS]
    scored = sorted(tools, key=lambda t: -sum(w in text[t.wire] for w in words))
    return [t for t in scored if any(w in text[t.wire] for w in words)][:SEARCH_HITS]


def schema_tokens(schemas: list[dict[str, Any]]) -> int:
    """Estimated request tokens of `schemas` (the same estimate as the budget's)."""
    return tokens_for_chars(len(json.dumps(schemas)))
