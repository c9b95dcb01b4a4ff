"""run_shell's background side (G2): a command started with `background: true`, and the
`shell_output` and `shell_stop` tools that read and end it (agent/background.py keeps them).

Reading and stopping ask no approval: they reach only processes this run started, after
the user approved starting them like any command.
"""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING, Any

from agent.background import FIRST_OUTPUT_SECONDS, BackgroundError, BackgroundTable
from agent.tools.registry import Tool, ToolContext, ToolError, ToolResult, describe_os_error

if TYPE_CHECKING:
    from agent.tools.shell import Launch

BACKGROUND_ENV = {"PYTHONUNBUFFERED": "1"}
"""A background command's Python writes its output as it goes, not when it exits: a server's
log is what shell_output is for."""
OUTPUT_ROOM = 300
"""Characters of the output cap kept for shell_output's status lines."""
UNAVAILABLE = "Background processes are not available here."
PRIVATE_NOTE = (
    "[the sandbox gives it a network of its own: its ports are reachable only from inside "
    "this command, not from other run_shell commands or the user's browser; the user can set "
    "`tools.shell.network: true` to share the host's network]"
)
KEEPS_RUNNING = (
    "runs in the background: keeps running after this call, until shell_stop, /ps or the app's exit"
)


def table_of(ctx: ToolContext) -> BackgroundTable:
    """The run's background table, or the ToolError saying there is none."""
    if ctx.background is None:
        raise ToolError(UNAVAILABLE)
    return ctx.background


def check_room(ctx: ToolContext) -> None:
    """Refuse before asking the user when the table is full already."""
    try:
        table_of(ctx).check_room()
    except BackgroundError as exc:
        raise ToolError(str(exc)) from None


def start(command: str, ctx: ToolContext, launch: Launch) -> ToolResult:
    """Start `command` in the background; return its id and what it wrote at first."""
    table = table_of(ctx)
    popen = launch.popen_args(ctx)
    setpriv = shutil.which("setpriv")
    if not launch.confined and setpriv is not None:
        # Unconfined, nothing else kills it if the app is killed: a parent-death signal does
        # (sent when the launcher thread, so the app, ends).
        popen["args"] = [setpriv, "--pdeathsig", "KILL", "--", *popen["args"]]
    private = launch.confined and ctx.sandbox is not None and not ctx.sandbox.network
    try:
        entry = table.start(command, popen, private_network=private)
    except BackgroundError as exc:
        raise ToolError(str(exc)) from None
    except OSError as exc:
        raise ToolError(f"Could not start the shell: {describe_os_error(exc)}.") from None
    cancel = ctx.cancel
    table.first_output(entry, lambda: cancel is not None and cancel.is_set())
    first = table.read(entry.id, max(ctx.output_cap - OUTPUT_ROOM, 100))
    if entry.running:
        head = (
            f"[started in the background as {entry.id}; read what it writes with "
            f'shell_output("{entry.id}"), end it with shell_stop("{entry.id}")]'
        )
        notes = [PRIVATE_NOTE] if private else []
        return ToolResult(True, "\n".join([head, *notes, first]))
    head = f"[it ended within {FIRST_OUTPUT_SECONDS:g} s, so it is not running in the background]"
    return ToolResult(entry.proc.returncode == 0, f"{head}\n{first}")


def shell_output(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    """What a background process wrote since the last read, under a line on its state."""
    table = table_of(ctx)
    try:
        return ToolResult(True, table.read(args["id"], max(ctx.output_cap - OUTPUT_ROOM, 100)))
    except BackgroundError as exc:
        raise ToolError(str(exc)) from None


def shell_stop(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    """End a background process's whole group."""
    table = table_of(ctx)
    try:
        return ToolResult(True, table.stop(args["id"]))
    except BackgroundError as exc:
        raise ToolError(str(exc)) from None


_ID = {"id": {"type": "string", "description": "The id run_shell gave it (bg1, bg2, ...)."}}

TOOLS = [
    Tool(
        name="shell_output",
        description=(
            "Read what a background process (started by run_shell with background: true) "
            "wrote since the last read, with its state and the TCP ports it listens on. "
            "Long output keeps its newest part."
        ),
        parameters={"type": "object", "properties": _ID, "required": ["id"]},
        handler=shell_output,
        kind="read",
        summary_keys=("id",),
    ),
    Tool(
        name="shell_stop",
        description=(
            "Stop a background process started by run_shell with background: true, with "
            "every process it started (SIGTERM, then SIGKILL)."
        ),
        parameters={"type": "object", "properties": _ID, "required": ["id"]},
        handler=shell_stop,
        kind="read",
        summary_keys=("id",),
    ),
]
