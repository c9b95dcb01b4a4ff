"""Headless mode: `hermes-tui run` and `hermes-tui sessions` (SPEC U6). No Textual here."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent import events as ev
from agent.hooks.rows import HOOK_ROW, hook_row_text
from hermes_tui import exit_codes
from hermes_tui.exit_codes import UsageError
from hermes_tui.safe_text import safe_line, safe_name, safe_output, safe_text
from hermes_tui.store import NOTHING_TO_CONTINUE, open_store


def user_error(exc: BaseException) -> str | None:
    """The one-sentence message for an error a user can fix, or None for a bug."""
    from agent.config import ConfigError
    from agent.providers.errors import ProviderError
    from storage.errors import StorageError

    if isinstance(exc, ConfigError | ProviderError | StorageError | LookupError):
        return str(exc).strip("'\"")
    return None


class _Printer:
    """Prints agent events: the answer on stdout as it streams (Z3), activity on stderr; or
    JSON lines (`as_json`); or only the final answer, at the end (`final`)."""

    def __init__(self, as_json: bool, final: bool = False) -> None:
        self.as_json = as_json
        self.final = final
        self._lock = threading.Lock()
        self._wrote_text = False
        self._owed_newline = False  # the last answer's line, ended when something follows
        self._attempt_chars = 0  # text of the current attempt: what a retry replaces
        self.told: set[str] = set()  # warnings already on stderr: the run's end repeats none
        self._out = sys.stdout
        self._err = sys.stderr
        self._terminal = _is_terminal(self._out)

    def __call__(self, event: ev.AgentEvent) -> None:
        with self._lock:
            try:
                self._print(event)
            except BrokenPipeError:
                # The reader left (`| head`): the rest goes nowhere, and the turn goes on.
                os.dup2(os.open(os.devnull, os.O_WRONLY), self._out.fileno())

    def _print(self, event: ev.AgentEvent) -> None:
        if self.as_json:
            self._json(event)
        elif self.final:
            self._final(event)
        else:
            self._human(event)

    def _json(self, event: ev.AgentEvent) -> None:
        payload = {"type": type(event).__name__, **_jsonable(event._asdict())}
        if isinstance(event, ev.TextDelta):
            self._attempt_chars += len(event.text)
        elif isinstance(event, ev.StreamReset):
            # The mark a script reads: drop this many characters of streamed text, the
            # failed attempt's, which the retry replaces (W11).
            payload["replaced_chars"] = self._attempt_chars
            self._attempt_chars = 0
        elif isinstance(event, ev.RequestStarted | ev.AssistantMessage):
            self._attempt_chars = 0
        self._out.write(json.dumps(payload) + "\n")
        self._out.flush()

    def _final(self, event: ev.AgentEvent) -> None:
        """`--final`: activity on stderr as ever, and the last answer once the turn ends."""
        if isinstance(event, ev.TurnFinished):
            text = safe_text(event.text)
            ended = event.status != "stopped" or self._terminal  # as `_human` ends it
            if text and ended and not text.endswith("\n"):
                text += "\n"
            self._out.write(text)
            self._out.flush()
        elif (line := _report(event, self.told)) is not None:
            self._err.write(line)
            self._err.flush()

    def _human(self, event: ev.AgentEvent) -> None:
        # Every outside string is made terminal-safe here (H1); --json keeps it exact.
        if isinstance(event, ev.TextDelta):
            self._text(safe_text(event.text))
        elif isinstance(event, ev.AssistantMessage):
            # The line is ended when something follows: a stop may come next, and then a
            # pipe gets no newline the server did not send.
            self._owed_newline = self._owed_newline or self._wrote_text
            self._wrote_text = False
        elif isinstance(event, ev.TurnFinished):
            # A stopped answer into a pipe ends where the server's text did: what was
            # printed is a prefix of it. A terminal gets its line ended for the prompt.
            if event.status != "stopped" or self._terminal:
                self._end_line()
        elif isinstance(event, ev.ToolFinished) and (plan := plan_of(event)) is not None:
            # The plan is the answer of a plan-mode run (N1): stdout, like the answer's text.
            self._text(safe_text(plan if plan.endswith("\n") else plan + "\n"))
        elif isinstance(event, ev.StreamReset) and self._wrote_text:
            self._end_line()
            self._err.write("[retrying: the partial answer above is replaced]\n")
            self._err.flush()
        elif (line := _report(event, self.told)) is not None:
            self._end_line()  # stderr and stdout may be one terminal or file
            self._err.write(line)
            self._err.flush()

    def _end_line(self) -> None:
        if self._wrote_text or self._owed_newline:
            self._out.write("\n")
            self._out.flush()
            self._wrote_text = self._owed_newline = False

    def _text(self, text: str) -> None:
        if not text:
            return
        if self._owed_newline:
            self._out.write("\n")
            self._owed_newline = False
        # Flushed per chunk, into a terminal or a pipe alike: `| tee`, `| less` and a
        # script reading the first line see the answer as it arrives (Z3).
        self._out.write(text)
        self._out.flush()
        self._wrote_text = True


def _report(event: ev.AgentEvent, told: set[str]) -> str | None:
    """The stderr line for tools, retries, waits, warnings and errors; None for the rest.
    A warning's text goes into `told`: the run's end repeats none."""
    if isinstance(event, ev.ToolStarted):
        return f"• {safe_name(event.summary)}\n"
    if isinstance(event, ev.ToolFinished) and not event.ok:
        output = safe_output(event.output).strip()
        first = output.split("\n")[0] if output else "failed"
        return f"  ✗ {first}\n"
    if isinstance(event, ev.DisplayRow) and event.kind == HOOK_ROW:
        return f"{safe_name(hook_row_text(event.metadata))}\n"  # a user hook ran (N4)
    if isinstance(event, ev.TodosChanged):
        return todo_line(event)
    if isinstance(event, ev.Retrying):
        return f"retrying ({event.progress}) in {event.delay:.0f} s: {safe_text(event.reason)}\n"
    if isinstance(event, ev.McpWaiting) and event.names:
        names = ", ".join(safe_name(name) for name in event.names)
        return f"waiting for MCP servers to start: {names}\n"
    if isinstance(event, ev.Notice) and event.level != "info":
        told.add(event.text)
        return f"hermes-tui: {safe_text(event.text)}\n"
    if isinstance(event, ev.SavingFailed | ev.TurnError):
        return f"hermes-tui: {safe_text(event.message)}\n"
    if isinstance(event, ev.CompactionFinished) and not event.ok and event.message:
        # Why nothing was compacted (it would not shrink, it was cut off, ...).
        return f"hermes-tui: {safe_text(event.message)}\n"
    return None


def todo_line(event: ev.TodosChanged) -> str:
    """The stderr line of a changed todo list (N2): progress, and the item in progress."""
    items = [item for item in event.items if isinstance(item, Mapping)]
    if not items:
        return "todo: the list is empty\n"
    current = next((i for i in items if i.get("status") == "in_progress"), None)
    doing = f" ▶ {safe_name(' '.join(str(current.get('text', '')).split()))}" if current else ""
    return f"todo {event.done}/{event.total}{doing}\n"


def plan_of(event: ev.ToolFinished) -> str | None:
    """The plan a propose_plan result shows, or None (N1)."""
    from agent.plans import PLAN_KEY

    kept = (event.display or {}).get(PLAN_KEY)
    return kept.get("text") if isinstance(kept, dict) else None


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


_MARKDOWN = re.compile(r"```[\w+-]*|`|\*\*|__|(?:^|(?<=\s))(?:#{1,6}|>|[-*+]|\d+\.)(?=\s)")
"""Markdown marks a snippet shows as syntax: fences, code ticks, bold, headings, quotes and
list bullets (single `*` and `_` stay: they are too often part of a name)."""


def plain_snippet(text: str) -> str:
    """A search snippet as one line of plain words: no Markdown marks, no line breaks."""
    return " ".join(_MARKDOWN.sub(" ", text).split())


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


def run_headless(
    task: str,
    *,
    model: str | None = None,
    resume: str | None = None,
    continue_latest: bool = False,
    context: str | None = None,
    as_json: bool = False,
    final: bool = False,
    yes: bool = False,
    demo: bool = False,
    mode: str | None = None,
) -> int:
    """Run one turn without the UI; the answer goes to stdout (as it streams, or only the
    final answer with `final`); returns the exit code (exit_codes.py).

    `continue_latest` resumes the session last used in this folder; `context` (piped
    stdin) follows the task in the message the model reads; `mode`: the approval mode of
    this run (plan: the plan is printed and nothing changes, N1).
    """
    return asyncio.run(
        _run(task, model, resume, continue_latest, context, as_json, final, yes, demo, mode)
    )


async def _run(
    task: str,
    model: str | None,
    resume: str | None,
    continue_latest: bool,
    context: str | None,
    as_json: bool,
    final: bool,
    yes: bool,
    demo: bool,
    mode: str | None = None,
) -> int:
    from hermes_tui.runtime import Runtime, load_config_for

    config = load_config_for(demo=demo, model=model)
    approve = (lambda _request: True) if yes else None
    workspace = Path(os.getcwd())
    try:
        prompt = _command_prompt(task, workspace, config.home)
    except LookupError as exc:
        raise UsageError(str(exc)) from None
    printer = _Printer(as_json, final)
    async with Runtime.open(
        config, printer, approve, workspace=workspace, on_exit_wait=_waiting
    ) as runtime:
        if continue_latest:
            latest = await runtime.db.latest_session_in(str(runtime.agent.workspace))
            if latest is None:
                raise LookupError(NOTHING_TO_CONTINUE)
            resume = latest["id"]
        result = await _turn(runtime.agent, task, resume, model, prompt, context, mode)
    told = result.error in printer.told  # the cut-off or budget notice already said it
    said = ("ok", "error", "capped")  # a failed or capped turn's TurnError said it already
    if not as_json and result.status not in said and result.error and not told:
        print(f"hermes-tui: {safe_text(result.error)}", file=sys.stderr)
    if not as_json and result.status == "stopped":
        print("hermes-tui: stopped.", file=sys.stderr)
    if not as_json and result.session_id:
        print(f"[session {result.session_id}]", file=sys.stderr)
    if runtime.stopped_background is not None:
        print(f"hermes-tui: {safe_text(runtime.stopped_background)}", file=sys.stderr)
    if runtime.not_saved is not None:
        print(f"hermes-tui: {safe_text(runtime.not_saved)}", file=sys.stderr)
        return exit_codes.ERROR
    return exit_codes.BY_STATUS.get(result.status, exit_codes.ERROR)


def _say_where(session: dict[str, Any], here: Path) -> None:
    """A resumed session from another folder: say where its tools run now (here: a script
    chose the folder by where it runs, so nothing is asked)."""
    from agent.config import tilde

    stored = session.get("workspace")
    if stored and Path(stored) != here:
        print(
            f"hermes-tui: this session worked in {safe_text(tilde(stored))}; "
            f"its tools run here, in {tilde(here)}.",
            file=sys.stderr,
        )


def _command_prompt(task: str, workspace: Path, home: Path) -> Any:
    """`/name args`: the custom command's turn (P3); None for any other task."""
    if not task.lstrip().startswith("/"):
        return None
    from hermes_tui.commands.custom import prompt_for_line  # Textual only for a command

    def skipped(sentence: str) -> None:
        print(f"hermes-tui: {safe_text(sentence)}", file=sys.stderr)

    return prompt_for_line(task, workspace, home, skipped)


async def _turn(
    agent: Any,
    task: str,
    resume: str | None,
    model: str | None,
    prompt: Any = None,
    context: str | None = None,
    mode: str | None = None,
) -> Any:
    """The one turn of a headless run: `task` (a custom command's `prompt`), `context`
    after it, or the interrupted turn of `resume` (D4)."""
    loop = asyncio.get_running_loop()
    previous = signal.getsignal(signal.SIGINT)
    try:
        loop.add_signal_handler(signal.SIGINT, agent.stop)
        if resume:
            session = await asyncio.to_thread(agent.resume, resume)
            _say_where(session, agent.workspace)
            if model:
                # A model named on the command line wins, recorded as /model records it (D1).
                await asyncio.to_thread(agent.set_model, model)
        if mode is not None:
            # After a resume: the flag wins over the mode kept with the session (N1).
            from agent.modes import switch_mode

            await asyncio.to_thread(switch_mode, agent, mode)
        if prompt is not None:
            text = _with_context(agent, prompt.text, context)
            return await asyncio.to_thread(
                agent.run_turn, text, shown=prompt.shown, model=prompt.model
            )
        if task.strip():
            # The transcript shows the task; the model reads the piped text after it.
            shown = task if context else None
            return await asyncio.to_thread(
                agent.run_turn, _with_context(agent, task, context), shown=shown
            )
        if resume and agent.interrupted:
            # The previous run died mid-turn: continue it with a typed recovery note (D4).
            return await asyncio.to_thread(agent.continue_interrupted)
        raise LookupError(
            "Nothing to do: give a task, or --resume a session whose last turn was interrupted."
        )
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        signal.signal(signal.SIGINT, previous)


def _with_context(agent: Any, text: str, context: str | None) -> str:
    """`text` with the piped context after it, its secrets redacted as a file's are (H5)."""
    if not context:
        return text
    return f"{text}\n\n{agent.secrets.redact(context)}"


def _waiting(sentence: str) -> None:
    """The exit waits for another process's lock: say what for, at once."""
    print(f"hermes-tui: {safe_text(sentence)}", file=sys.stderr, flush=True)


def usage_command(days: int, *, as_json: bool) -> int:
    """`hermes-tui usage`: spend and tokens by day, model and project, from the store ($2)."""
    from agent.config import load_config
    from hermes_tui.usage_view import plain_table, usage_lines

    if days < 1:
        raise UsageError(f"--days must be 1 or more, not {days}.")
    config = load_config()

    async def read() -> Any:
        db = await open_store(config)
        try:
            return await db.usage_report(days)
        finally:
            await db.close()

    lines = usage_lines(asyncio.run(read()), config)
    if as_json:
        for line in lines:
            print(json.dumps(line.as_json()))
    elif not lines:
        print(f"no usage in the last {days} days")
    else:
        print(plain_table(lines), end="")
    return exit_codes.OK


def sessions_command(args: Any) -> int:
    """`hermes-tui sessions list|search`: print sessions or search hits."""
    return asyncio.run(_sessions(args))


async def _sessions(args: Any) -> int:
    from agent.config import load_config

    config = load_config()
    db = await open_store(config)
    try:
        if args.sessions_command == "reindex":
            indexed = await db.rebuild_search_index()
            print(f"search index rebuilt: {indexed} messages indexed")
            return 0
        if args.limit < 1:
            raise UsageError(f"--limit must be 1 or more, not {args.limit}.")
        items: list[dict[str, Any]]  # one line of output each, as --json prints it
        if args.sessions_command == "list":
            # One more than shown tells whether the list stopped at its limit.
            sessions = await db.list_sessions(limit=args.limit + 1)
            more = len(sessions) > args.limit
            items = [
                {
                    "id": r["id"],
                    "title": r["title"],
                    "updated_at": r["updated_at"],
                    "model": f"{r.get('provider')}:{r.get('model')}",
                    "messages": r.get("message_count", 0),
                }
                for r in sessions[: args.limit]
            ]
        else:
            hits = await db.search(args.query, limit=args.limit + 1)
            more = len(hits) > args.limit
            items = [
                {
                    "id": r["session_id"],
                    "title": r["title"],
                    "updated_at": r["updated_at"],
                    "snippet": r["snippet"],
                }
                for r in hits[: args.limit]
            ]
    finally:
        await db.close()
    if args.json:
        for item in items:
            print(json.dumps(item))
    elif not items:
        print("no sessions" if args.sessions_command == "list" else "no matches")
    for item in [] if args.json else items:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(item["updated_at"] or 0))
        # Titles and snippets are stored outside text: shown exactly, hidden characters too.
        extra = plain_snippet(safe_line(str(item.get("snippet") or item.get("model", ""))))
        title = safe_name(str(item["title"] or ""))
        print(f"{item['id']}  {when}  {title[:50]:<50}  {extra}")
    if more:
        # On stderr: stdout (and --json's lines) stays the list itself.
        print(
            f"hermes-tui: stopped at --limit {args.limit}; there are more "
            f"(--limit {args.limit * 2} shows more).",
            file=sys.stderr,
        )
    return exit_codes.OK
