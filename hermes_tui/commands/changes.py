"""Commands about what the agent changed: undo, rewind, diff, fork and export (X1, X2)."""

from __future__ import annotations

from hermes_tui.commands.context import CommandContext
from hermes_tui.commands.registry import command
from hermes_tui.doors import agent_of, store_of


@command("undo", "", "Take back the last turn that changed files")
async def undo(ctx: CommandContext, _argument: str) -> None:
    """Take back the newest turn's changes to files not undone yet; edits made outside the
    agent are kept unless confirmed."""
    ctx.changes.start(ctx.changes.undo())


@command("redo", "", "Put back what the last /undo took back")
async def redo(ctx: CommandContext, _argument: str) -> None:
    """Step forward again over the last /undo (gone once a turn or a /rewind changes files)."""
    ctx.changes.start(ctx.changes.redo())


@command("rewind", "", "Rewind code and chat to a message (esc esc)")
async def rewind(ctx: CommandContext, _argument: str) -> None:
    """Open the rewind picker."""
    ctx.changes.start(ctx.changes.open_picker())


@command("diff", "", "Show every file the session changed")
async def diff(ctx: CommandContext, _argument: str) -> None:
    """The session's changes against its first checkpoint, one fold per file."""
    ctx.changes.start(ctx.changes.show_diff())


@command("fork", "", "A new session with this session's history")
async def fork(ctx: CommandContext, _argument: str) -> None:
    """A new session with the whole history so far (the panel shows where it came from)."""
    ctx.changes.start(ctx.changes.fork())


@command("export", "[md|json] [path]", "Write the transcript to a file")
async def export(ctx: CommandContext, argument: str) -> None:
    """Write the session's visible transcript (no reasoning) as Markdown or JSON."""
    from hermes_tui.export import (
        EXPORTS_DIR,
        ExportError,
        parse_arguments,
        to_json,
        to_markdown,
        write_export,
    )
    from hermes_tui.history import AgentRows
    from hermes_tui.widgets.markers import marker_text
    from storage.files import private_dir

    agent = agent_of(ctx)
    if agent.session_id is None:
        await ctx.notice("Nothing to export yet: send a message first.", "error")
        return
    try:
        fmt, path = parse_arguments(argument, agent.session_id, agent.workspace, ctx.config.home)
    except ExportError as exc:
        await ctx.notice(str(exc), "error")
        return
    db = store_of(ctx)
    await db.flush()
    session = await db.get_session(agent.session_id)
    if session is None:  # flushed just now and never deleted: a sentence all the same
        await ctx.notice("Nothing to export: this session is not in the store.", "error")
        return
    rows = await db.load_messages(agent.session_id)
    if fmt == "json":
        text = to_json(session, rows)
    else:
        summary = AgentRows(agent.registry).tool_summary
        text = to_markdown(session, rows, summary=summary, marker=marker_text)
    try:
        if path.parent == ctx.config.home / EXPORTS_DIR:
            private_dir(path.parent)  # the default folder, made on first use (0700, H5)
        write_export(path, text)
    except ExportError as exc:
        await ctx.notice(str(exc), "error")
        return
    from agent.homes import tilde

    await ctx.notice(f"Exported {len(rows)} rows to {tilde(path)}.")
