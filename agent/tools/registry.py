"""The tool registry: tool specs, the context a call runs in, results, and approval."""

from __future__ import annotations

import copy
import json
import math
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agent import outside_json
from agent.kinds import ApprovalMode
from agent.messages import ImagePart
from agent.modes import PLAN_NO_CHANGES
from agent.secrets import STANDARD_KEY_ENV
from agent.text_cuts import cut_with_ellipsis
from agent.tools.approvals import (
    AlwaysScope,
    ApprovalMemory,
    Verdict,
    always_scope,
    declined_message,
)

if TYPE_CHECKING:
    from agent.background import BackgroundTable
    from agent.config import WebSettings
    from agent.todos import TodoList
    from agent.tools.permissions import Permissions
    from agent.tools.rules import PlacedRule
    from agent.tools.sandbox import Sandbox

DECLINED = "The user declined to run this tool call."
NO_APPROVER = (
    "Refused: this tool needs the user's approval, which is not available here "
    "(run with --yes or approval: yolo)."
)
PLAN_UNCONFINED_NOTE = (
    "Plan mode: this command is not confined read-only (no working sandbox here), so it "
    "could change files; it is asked every time."
)

DENIED_BY_RULE = "Refused: the user's permission rule `deny: {rule}` ({origin}) forbids this call."

NO_APPROVER_PROTECTED = (
    "Refused: {protected}; writing it needs the user's approval, which is not available "
    "here (run with --yes or approval: yolo)."
)

SUMMARY_WIDTH = 80
DETAIL_CAP = 20_000


@dataclass(frozen=True)
class ApprovalRequest:
    """What the user is asked to approve: the tool, a summary, the detail, what "always" covers.

    `protected` marks a write to a path that runs code on its own (agent/tools/protected.py):
    it is asked every time, so no "always" covers it and none is offered.
    """

    tool: str
    summary: str
    detail: str
    protected: bool = False
    always: AlwaysScope | None = None
    note: str = ""
    """A line of context the dialog shows (an MCP tool's server and its own claims)."""
    project: bool = False
    """Offer "always for this project" besides "always" (MCP tools, simple shell commands)."""
    plan: bool = False
    """A plan to approve (`detail` is its Markdown): the plan choices, not yes / no (N1)."""
    rule: str = ""
    """The permission rule "always for this project" adds (a shell command's), or ""."""
    subagent: str = ""
    """Who asks, when a subagent does (G1): "the explore subagent (its job)"; "": the agent."""


@dataclass
class ToolContext:
    """Where and how a tool call runs: workspace, approval mode and callback, limits."""

    workspace: Path
    approval_mode: str = ApprovalMode.ASK
    approve: Callable[[ApprovalRequest], bool | Verdict] | None = None
    approvals: ApprovalMemory = field(default_factory=ApprovalMemory)
    shell_timeout: float = 120.0
    output_cap: int = 30_000
    cancel: threading.Event | None = None
    hidden_env: frozenset[str] = frozenset(STANDARD_KEY_ENV)
    """Environment variables run_shell children do not get (the agent passes its keys' names)."""
    before_change: Callable[[str, str | None], None] | None = None
    """Called just before an edit or shell call changes anything: (tool kind, path or None);
    the agent's checkpoints take the turn's snapshot here (X2)."""
    after_change: Callable[[str, str | None], None] | None = None
    """Called after such a call committed: the checkpoints note what the agent wrote."""
    sandbox: Sandbox | None = None
    """How run_shell is confined (None: unconfined, as with `sandbox: off`)."""
    app_homes: tuple[Path, ...] = ()
    """The app's own homes (`Config.app_homes`): a write inside one always asks (H9)."""
    switch_mode: Callable[[str], None] | None = None
    """Switches the session's mode (an approved plan leaves plan mode, N1)."""
    ended_by_plan: str | None = None
    """Set by propose_plan when the turn ends on the plan shown (its text, the turn's answer)."""
    permissions: Permissions | None = None
    """The allow / ask / deny rules in effect (N3); None: no rules."""
    keep_todos: Callable[[TodoList], None] | None = None
    """Keeps the list a `todo_write` call sent with the session (N2); None: not kept."""
    web: WebSettings | None = None
    """`web:`: the hosts web_fetch may reach though private, and never (G3); None: neither."""
    background: BackgroundTable | None = None
    """The run's background processes (G2); None: `background: true` is refused."""
    call_id: str = ""
    """The id of the call being run (a subagent's progress names its `task` call, G1)."""
    hook_decision: str = ""
    """What the user's before_tool hooks said of the call running now: `allow` (as an allow
    rule: asks nothing the mode would ask; ask and deny rules and protected paths still win),
    `ask` (as an ask rule) or "" (N4)."""

    def __post_init__(self) -> None:
        self.workspace = Path(self.workspace).expanduser().resolve()

    @property
    def read_only(self) -> bool:
        """True in plan mode: nothing may change the workspace (N1)."""
        return self.approval_mode == ApprovalMode.PLAN


@dataclass(frozen=True)
class ToolResult:
    """The outcome of a tool call, sent back to the model; `declined`: the user said no.

    `display` is for the transcript only (a file change's diff): kept with the result's row
    as display metadata, never part of what the model reads (D1, X1).
    """

    ok: bool
    output: str
    declined: bool = False
    display: dict[str, Any] | None = None
    images: tuple[ImagePart, ...] = ()
    """Images the model sees with the output (an MCP tool's image result, G4)."""


class ToolError(Exception):
    """A tool refused or failed; the message is one sentence meant for the model."""


@dataclass
class Pending:
    """A validated side-effecting call: `request()` describes it, `commit()` performs it.

    `protected` is the sentence saying why its target runs code on its own, or "".
    """

    request: Callable[[], ApprovalRequest]
    commit: Callable[[], ToolResult]
    protected: str = ""
    remember_project: Callable[[], None] | None = None
    """Stores "always for this project" for this call's tool (MCP tools)."""
    touches: str | None = None
    """The workspace path the commit writes, when it is one file (a shell command: None)."""


Handler = Callable[[ToolContext, dict[str, Any]], "ToolResult | Pending"]


@dataclass
class Tool:
    """One tool: its name, model-facing description, JSON-schema parameters and handler."""

    name: str
    description: str
    parameters: dict[str, Any]
    handler: Handler
    kind: str = "read"  # read | edit | shell | mcp | web: decides whether approval is needed
    summary_keys: tuple[str, ...] = field(default_factory=tuple)
    origin: tuple[str, str] | None = None
    """(server, the server's tool name) for an MCP tool; its schema is the server's to check,
    so the arguments go to it as the model wrote them."""
    summarise: Callable[[dict[str, Any]], str] | None = None
    """The words after the name in a call's one-row summary, when no one argument says it
    (todo_write's list); must read any arguments, however malformed, without raising."""
    side_by_side: Callable[[dict[str, Any]], bool] | None = None
    """Whether a call may run beside the batch's other such calls (a read-only subagent's
    `task`, G1); must read any arguments without raising. None: one at a time."""


class ToolSource(Protocol):
    """Tools that come and go (an MCP server's): asked by name and for schemas on every call."""

    def tool(self, name: str) -> Tool | None:
        """The tool called `name` now, or None."""
        ...

    def names(self) -> list[str]:
        """The names of its tools now."""
        ...

    def schemas(self) -> list[dict[str, Any]]:
        """The schemas to send in the next request."""
        ...

    def begin_turn(self, sink: Callable[[Any], None], stopped: Callable[[], bool]) -> None:
        """A turn starts (before its first model call): may wait, briefly, for tools."""
        ...


def cap_text(text: str, cap: int) -> str:
    """Keep the head and tail of `text` within about `cap` characters, marking the cut."""
    if cap <= 0 or len(text) <= cap:
        return text
    half = max(cap // 2, 1)
    omitted = len(text) - 2 * half
    if omitted <= 0:
        return text
    return f"{text[:half]}\n[... {omitted} characters omitted ...]\n{text[-half:]}"


def one_line(text: str, width: int = SUMMARY_WIDTH) -> str:
    """Collapse whitespace to a single line and truncate it to `width` characters."""
    return cut_with_ellipsis(" ".join(str(text).split()), width)


def one_row(text: str, width: int = SUMMARY_WIDTH) -> str:
    """A name or command for one row of the UI, cut to `width`; nothing is collapsed.

    Unlike `one_line`, a newline, a tab or a run of spaces stays what it is: the UI shows
    each visibly (SPEC H1), so `a\\nb.txt` never reads as `a b.txt`.
    """
    return cut_with_ellipsis(str(text), width)


_TYPE_NAMES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "object": "an object",
    "array": "an array",
}


def _as_string(value: Any) -> Any:
    if isinstance(value, str):
        return value
    raise ValueError


def _as_integer(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        return int(value.strip())
    raise ValueError


def _as_number(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError
    if isinstance(value, int | float) and math.isfinite(value):
        return value
    if isinstance(value, str):
        number = float(value.strip())
        if math.isfinite(number):
            return number
    raise ValueError


def _as_boolean(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueError


def _of_type(kind: type) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if isinstance(value, kind):
            return value
        raise ValueError

    return check


_COERCERS: dict[str, Callable[[Any], Any]] = {
    "string": _as_string,
    "integer": _as_integer,
    "number": _as_number,
    "boolean": _as_boolean,
    "object": _of_type(dict),
    "array": _of_type(list),
}


def _coerce(value: Any, kind: str) -> Any:
    """Return `value` as JSON-schema type `kind`, leniently; raise ValueError if impossible."""
    coerce = _COERCERS.get(kind)
    return value if coerce is None else coerce(value)


def validate_args(tool: Tool, args: Any) -> dict[str, Any]:
    """Check `args` against the tool's schema; return a cleaned copy or raise ToolError."""
    if args is None:
        args = {}
    if isinstance(args, str):
        try:
            args = outside_json.loads(args) if args.strip() else {}
        except ValueError:
            raise ToolError(
                f"Invalid arguments for {tool.name}: they are not a JSON object."
            ) from None
    if not isinstance(args, dict):
        raise ToolError(
            f"Invalid arguments for {tool.name}: expected a JSON object, got {type(args).__name__}."
        )
    if tool.origin is not None:
        return args  # an MCP server validates against its own schema
    props: dict[str, Any] = tool.parameters.get("properties", {})
    required = tool.parameters.get("required", [])
    missing = [name for name in required if args.get(name) is None]
    if missing:
        names = ", ".join(repr(name) for name in missing)
        plural = "s" if len(missing) > 1 else ""
        raise ToolError(
            f"Invalid arguments for {tool.name}: missing required argument{plural} {names}."
        )
    clean: dict[str, Any] = {}
    for name, value in args.items():
        spec = props.get(name)
        if spec is None or value is None:
            continue  # unknown or explicitly null optional arguments are ignored
        kind = spec.get("type", "")
        try:
            clean[name] = _coerce(value, kind)
        except (ValueError, OverflowError):
            raise ToolError(
                f"Invalid arguments for {tool.name}: {name!r} must be "
                f"{_TYPE_NAMES.get(kind, kind)}, got {type(value).__name__}."
            ) from None
    return clean


class ToolRegistry:
    """The tools the agent may call, with approval and error handling around them."""

    def __init__(self, tools: list[Tool] | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        self.sources: list[ToolSource] = []
        for tool in tools or []:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        """Add (or replace) a tool."""
        self._tools[tool.name] = tool

    def add_source(self, source: ToolSource) -> None:
        """Add tools that change over time (MCP); built-in names win over theirs."""
        self.sources.append(source)

    def subset(self, names: Iterable[str], *leaving_out: str) -> ToolRegistry:
        """A registry of the tools called `names` as they are now (built-in or a source's),
        but those `leaving_out`; a name no tool has is left out too."""
        found = (self.get(name) for name in names if name not in leaving_out)
        return ToolRegistry([tool for tool in found if tool is not None])

    def get(self, name: str) -> Tool | None:
        """The tool called `name`, or None."""
        tool = self._tools.get(name)
        if tool is None:
            for source in self.sources:
                tool = source.tool(name)
                if tool is not None:
                    break
        return tool

    def names(self) -> list[str]:
        """Tool names: built-ins in registration order, then each source's."""
        return list(self._tools) + [name for s in self.sources for name in s.names()]

    def schemas(self, mode: str | None = None) -> list[dict[str, Any]]:
        """Provider-neutral schemas: [{"name", "description", "parameters"}]; with `mode`,
        only the tools offered in it (propose_plan only in plan mode, N1)."""
        from agent.plans import offered

        own = [
            {
                "name": tool.name,
                "description": tool.description,
                "parameters": copy.deepcopy(tool.parameters),
            }
            for tool in self._tools.values()
            if mode is None or offered(tool.name, mode)
        ]
        return own + [schema for source in self.sources for schema in source.schemas()]

    def begin_turn(self, sink: Callable[[Any], None], stopped: Callable[[], bool]) -> None:
        """A turn starts: each source may get its tools ready (bounded, and stops with it)."""
        for source in self.sources:
            source.begin_turn(sink, stopped)

    def summary(self, name: str, args: dict[str, Any]) -> str:
        """One-row argument summary for the UI, e.g. "read_file src/app.py"."""
        tool = self.get(name)
        if not isinstance(args, dict):
            return one_row(name)
        parts: list[str] = []
        if tool is not None and tool.summarise is not None:
            parts.append(tool.summarise(args))
        elif tool is not None and tool.summary_keys:
            for key in tool.summary_keys:
                value = args.get(key)
                if value is not None and value != "":
                    parts.append(str(value))
        elif args:
            try:
                parts.append(json.dumps(args, ensure_ascii=False, default=str))
            except (TypeError, ValueError):
                parts.append(str(args))
        return one_row(" ".join([name, *parts]))

    def needs_approval(
        self, name: str, mode: str, *, protected: bool = False, sandboxed: bool = False
    ) -> bool:
        """ask: writes, edits and shell need approval; auto-edit: only shell; yolo: none;
        plan: shell only where the sandbox cannot confine it read-only (edits are refused).

        A `protected` target (a path that runs code on its own) needs it in every mode but yolo.
        `sandboxed`: shell commands run under the sandbox, so auto-edit runs them unasked
        (they cannot reach outside the workspace, X3), and plan too (read-only there, N1).
        """
        tool = self.get(name)
        if tool is None:
            return False
        if mode == ApprovalMode.YOLO:
            return False
        if protected:
            return True
        if mode in (ApprovalMode.AUTO_EDIT, ApprovalMode.PLAN):
            # An MCP tool can do anything: it asks like a shell command (M2), sandbox or not;
            # a web fetch sends what its URL carries out of the machine: it asks per domain (G3).
            return tool.kind in ("mcp", "web") or (tool.kind == "shell" and not sandboxed)
        # "ask", and any unknown mode, is treated as the safest one.
        return tool.kind in ("edit", "shell", "mcp", "web")

    def run(self, name: str, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Run a tool call; never raises: every failure is a ToolResult(ok=False, ...)."""
        try:
            result = self._run(name, args, ctx)
        except ToolError as exc:
            result = ToolResult(False, str(exc))
        except OSError as exc:
            result = ToolResult(False, f"{name} failed: {describe_os_error(exc)}.")
        except RecursionError:
            result = ToolResult(False, f"{name} failed: the input is too deeply nested.")
        except Exception as exc:  # a tool bug must not crash the turn
            result = ToolResult(False, f"{name} failed unexpectedly: {type(exc).__name__}: {exc}")
        output = result.output if isinstance(result.output, str) else str(result.output)
        return ToolResult(
            bool(result.ok),
            cap_text(output, ctx.output_cap),
            result.declined,
            result.display,
            tuple(result.images),
        )

    def _run(self, name: str, args: Any, ctx: ToolContext) -> ToolResult:
        tool = self.get(name)
        if tool is None:
            names = self.names()
            known = ", ".join(names[:40]) or "none"
            if len(names) > 40:
                known += f" and {len(names) - 40} more"
            return ToolResult(False, f"Unknown tool {name!r}; the available tools are: {known}.")
        clean = validate_args(tool, args)
        if ctx.read_only and tool.kind == "edit":
            return ToolResult(False, PLAN_NO_CHANGES)  # before the handler reads anything (N1)
        rule = governing_rule(tool, clean, ctx)
        if rule is not None and rule.decision == "deny":
            # Deny wins in every mode, yolo too, before the tool reads or asks anything (N3).
            return ToolResult(False, DENIED_BY_RULE.format(rule=rule.rule.text, origin=rule.origin))
        outcome = tool.handler(ctx, clean)
        if isinstance(outcome, ToolResult):
            return outcome
        refusal = self.ask(tool, clean, outcome, ctx, rule)
        if refusal is not None:
            return refusal
        # An MCP tool may change the workspace too (a local server runs as the user): the
        # turn's checkpoint is taken before it, as before a shell command (X2).
        changes = tool.kind in ("edit", "shell", "mcp")
        if changes and ctx.before_change is not None:
            ctx.before_change(tool.kind, outcome.touches)
        try:
            return outcome.commit()
        finally:
            if changes and ctx.after_change is not None:
                ctx.after_change(tool.kind, outcome.touches)

    def ask(
        self,
        tool: Tool,
        clean: dict[str, Any],
        outcome: Pending,
        ctx: ToolContext,
        rule: PlacedRule | None = None,
    ) -> ToolResult | None:
        """None when `outcome` may commit (asking the user if the mode or an `ask` rule wants
        it, unless an `allow` rule covers it), else the refusal to give the model."""
        name = tool.name
        protected = outcome.protected
        # Inside the app's own home the sandbox leaves its config writable: shell asks (H9).
        sandboxed = ctx.sandbox is not None and ctx.sandbox.confines(ctx.workspace)
        forced = (rule is not None and rule.decision == "ask") or ctx.hook_decision == "ask"
        allowed = (rule is not None and rule.decision == "allow") or ctx.hook_decision == "allow"
        if forced or self.needs_approval(
            name, ctx.approval_mode, protected=bool(protected), sandboxed=sandboxed
        ):
            # A protected path is asked every time: no remembered "always" answers it; nor
            # does one a shell command in plan mode that the sandbox cannot make read-only.
            unconfined_plan = ctx.read_only and tool.kind == "shell"
            asked_each_time = bool(protected) or unconfined_plan or forced
            if not asked_each_time and allowed:
                return None  # the user's rule or hook allows it (N3, N4); protected paths ask
            scope = None if asked_each_time else always_scope(name, tool.kind, clean, tool.origin)
            if ctx.approvals.covers(scope):
                return None
            request = replace(outcome.request(), always=scope)
            if unconfined_plan:
                request = replace(request, note=PLAN_UNCONFINED_NOTE)
            offer = project_rule_offer(tool, clean, ctx) if scope is not None else ""
            if offer:
                request = replace(request, project=True, rule=offer)
            if ctx.approve is None:
                if protected:
                    return ToolResult(False, NO_APPROVER_PROTECTED.format(protected=protected))
                return ToolResult(False, NO_APPROVER)
            try:
                verdict = Verdict.of(ctx.approve(request))
            except Exception as exc:
                return ToolResult(
                    False, f"Could not ask the user for approval ({type(exc).__name__}: {exc})."
                )
            if not verdict.approved:
                return ToolResult(False, declined_message(DECLINED, verdict.reason), declined=True)
            if verdict.always and scope is not None:
                ctx.approvals.remember(scope)
            if verdict.project and outcome.remember_project is not None:
                outcome.remember_project()
            if verdict.project and request.rule and ctx.permissions is not None:
                remember_rule(ctx.permissions, request.rule)
        return None


def governing_rule(tool: Tool, clean: dict[str, Any], ctx: ToolContext) -> PlacedRule | None:
    """The permission rule that decides this call (deny over ask over allow), or None."""
    if ctx.permissions is None:
        return None
    from agent.tools.rules import Call

    return ctx.permissions.decide(Call(tool.name, tool.kind, clean, ctx.workspace))


def project_rule_offer(tool: Tool, clean: dict[str, Any], ctx: ToolContext) -> str:
    """The rule "always for this project" would add for a simple shell command or a web
    fetch's domain, or ""."""
    if tool.kind == "web" and ctx.permissions is not None:
        from agent.web_hosts import url_host

        host = url_host(clean.get("url"))
        return f"{tool.name}({host})" if host and ctx.permissions.stores_project_rules else ""
    command = clean.get("command")
    if tool.kind != "shell" or not isinstance(command, str) or ctx.permissions is None:
        return ""
    if not ctx.permissions.stores_project_rules:
        return ""
    from agent.tools.rule_offer import offered_rule

    return offered_rule(tool.name, command) or ""


def remember_rule(permissions: Permissions, rule: str) -> None:
    """Save a project rule; a failure to save is logged, the call itself goes ahead."""
    from agent.tools.permissions import PermissionsError

    try:
        permissions.allow_in_project(rule)
    except PermissionsError as exc:
        import logging

        logging.getLogger("hermes_tui.permissions").warning("%s", exc)


def describe_os_error(exc: OSError) -> str:
    """A short human description of an OSError, without a trailing period."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    return reason.rstrip(".")


def default_registry() -> ToolRegistry:
    """A registry with every built-in tool: files, search, shell, the plan, the todo list, web,
    and the background processes' output and stop."""
    from agent import plans
    from agent.tools import files, search, shell, shell_background, todo, web

    tools = [*files.TOOLS, *search.TOOLS, *shell.TOOLS, plans.TOOL, *todo.TOOLS, *web.TOOLS]
    return ToolRegistry([*tools, *shell_background.TOOLS])
