"""What an "always" answer covers, the user's verdict, and the session's remembered approvals."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

DECLINED_BECAUSE = "The user declined to run this tool call. Their reason: {reason}"
REASON_MAX_CHARS = 500
"""A reason longer than this is cut: it is a short note to the model, not a new task."""


@dataclass(frozen=True)
class AlwaysScope:
    """What "always this session" covers: one tool, and for run_shell one exact command.

    A shell command is remembered as its exact text, never as a prefix: approving `git status`
    must not approve `git status; rm -rf ~`, and no prefix rule is both useful and safe against
    `;`, `&&`, `$(...)` and friends. File tools are remembered per tool (write_file or
    edit_file), since every path they touch is confined to the workspace already. An MCP tool
    is remembered as (server, the server's tool name): any arguments, that tool only. A web
    fetch is remembered per domain: the URL's exact host (G3).
    """

    tool: str
    command: str | None = None
    server: str | None = None
    domain: str | None = None

    def describe(self) -> str:
        """In words, for the dialog: what answering "always" will let through."""
        if self.domain is not None:
            return (
                f"Always for this domain: every {self.tool} of a page on {self.domain}, for "
                "the rest of this session; other domains still ask."
            )
        if self.server is not None:
            return (
                f"Always: every call of {self.tool} from MCP server {self.server}, with any "
                "arguments, for the rest of this session."
            )
        if self.command is not None:
            return (
                "Always: this exact command, for the rest of this session; "
                "any other command still asks."
            )
        return (
            f"Always: every {self.tool} call, to any file in the workspace, for the rest of "
            "this session."
        )


def always_scope(
    tool_name: str, kind: str, args: dict[str, Any], origin: tuple[str, str] | None = None
) -> AlwaysScope | None:
    """The scope an "always" answer to this call would cover, or None when it is not offered.

    `origin` is (server, tool) for an MCP tool.
    """
    if origin is not None:
        return AlwaysScope(origin[1], server=origin[0])
    if kind == "shell":
        command = args.get("command")
        return AlwaysScope(tool_name, command) if isinstance(command, str) else None
    if kind == "edit":
        return AlwaysScope(tool_name)
    if kind == "web":
        from agent.web_hosts import url_host

        host = url_host(args.get("url"))
        return AlwaysScope(tool_name, domain=host) if host else None
    return None


@dataclass(frozen=True)
class Verdict:
    """The user's answer to an approval: yes or no, remember it, and a reason for a no.

    `project`: "always for this project" (stored in the user's home, for MCP tools).
    `mode`: for a plan (N1), the mode its approval switches to.
    """

    approved: bool
    always: bool = False
    reason: str = ""
    project: bool = False
    mode: str = ""

    @classmethod
    def of(cls, answer: Any) -> Verdict:
        """A Verdict from an approver's answer (a Verdict, or a bool from simple approvers)."""
        return answer if isinstance(answer, Verdict) else cls(bool(answer))


def declined_message(default: str, reason: str) -> str:
    """What the model reads after a no: `default`, or the user's reason when they gave one."""
    reason = " ".join(reason.split())[:REASON_MAX_CHARS]
    return DECLINED_BECAUSE.format(reason=reason) if reason else default


class ApprovalMemory:
    """The "always" answers given in this session: the one place that remembers them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._scopes: set[AlwaysScope] = set()

    def remember(self, scope: AlwaysScope) -> None:
        """Let calls in `scope` run without asking until `clear()`."""
        with self._lock:
            self._scopes.add(scope)

    def covers(self, scope: AlwaysScope | None) -> bool:
        """True when an earlier "always" answer covers `scope` exactly."""
        if scope is None:
            return False
        with self._lock:
            return scope in self._scopes

    def clear(self) -> None:
        """Forget every remembered answer (a new or resumed session)."""
        with self._lock:
            self._scopes.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._scopes)
