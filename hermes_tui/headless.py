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
from hermes_tui.safe_text import safe_line, safe_name, safe_output, safe_text
from hermes_tui.store import open_store

_STATUS_EXIT = {"ok": 0, "error": 1, "budget": 3, "truncated": 4, "stopped": 130}


def user_error(exc: BaseException) -> str | None:
    """The one-sentence message for an error a user can fix, or None for a bug."""
    from agent.config import ConfigError
    from agent.providers.errors import ProviderError
    from storage.errors import StorageError

    if isinstance(exc, ConfigError | ProviderError | StorageError | LookupError):
        return str(exc).strip("'\"")
    return None


class _Printer:
    """Prints agent events: the answer on stdout, activity on stderr, or JSON lines."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        self._lock = threading.Lock()
        self._wrote_text = False
        self.told: set[str] = set()  # warnings already on stderr: the run's end repeats none
        self._out = sys.stdout
        self._err = sys.stderr
        # Into a pipe or a file the answer is held until its attempt completes, so a retried
        # attempt's partial text is never printed (W11); a terminal sees it stream.
        self._held: list[str] | None = None if _is_terminal(self._out) else []

    def __call__(self, event: ev.AgentEvent) -> None:
        with self._lock:
            try:
                self._print(event)
            except BrokenPipeError:
                # The reader left (`| head`): the rest goes nowhere, and the turn goes on.
                os.dup2(os.open(os.devnull, os.O_WRONLY), self._out.fileno())

    def _print(self, event: ev.AgentEvent) -> None:
        if self.as_json:
            payload = {"type": type(event).__name__, **_jsonable(event._asdict())}
            self._out.write(json.dumps(payload) + "\n")
            self._out.flush()
            return
        self._human(event)

    def _human(self, event: ev.AgentEvent) -> None:
        # Every outside string is made terminal-safe here (H1); --json keeps it exact.
        if isinstance(event, ev.TextDelta):
            self._text(safe_text(event.text))
        elif isinstance(event, ev.AssistantMessage | ev.TurnFinished):
            self._release()  # a stopped or failed last attempt keeps its partial text
            if self._wrote_text:
                self._out.write("\n")
                self._wrote_text = False
        elif isinstance(event, ev.StreamReset) and self._held:
            self._held.clear()  # that attempt's text was never printed
        elif isinstance(event, ev.StreamReset) and self._wrote_text:
            self._out.write("\n")
            self._err.write("[retrying: the partial answer above is replaced]\n")
            self._wrote_text = False
        else:
            self._report(event)
        self._err.flush()

    def _report(self, event: ev.AgentEvent) -> None:
        """What goes to stderr: tools, retries, waits, warnings and errors."""
        if isinstance(event, ev.ToolStarted):
            self._err.write(f"• {safe_name(event.summary)}\n")
        elif isinstance(event, ev.ToolFinished) and not event.ok:
            output = safe_output(event.output).strip()
            first = output.split("\n")[0] if output else "failed"
            self._err.write(f"  ✗ {first}\n")
        elif isinstance(event, ev.Retrying):
            self._err.write(
                f"retrying ({event.count}) in {event.delay:.0f} s: {safe_text(event.reason)}\n"
            )
        elif isinstance(event, ev.McpWaiting) and event.names:
            names = ", ".join(safe_name(name) for name in event.names)
            self._err.write(f"waiting for MCP servers to start: {names}\n")
        elif isinstance(event, ev.Notice) and event.level != "info":
            self._err.write(f"hermes-tui: {safe_text(event.text)}\n")
            self.told.add(event.text)
        elif isinstance(event, ev.SavingFailed | ev.TurnError):
            self._err.write(f"hermes-tui: {safe_text(event.message)}\n")
        elif isinstance(event, ev.CompactionFinished) and not event.ok and event.message:
            # Why nothing was compacted (it would not shrink, it was cut off, ...).
            self._err.write(f"hermes-tui: {safe_text(event.message)}\n")

    def _text(self, text: str) -> None:
        if self._held is not None:
            self._held.append(text)
            return
        self._out.write(text)
        self._out.flush()
        self._wrote_text = True

    def _release(self) -> None:
        """Print the text held for the attempt that just completed."""
        if self._held:
            self._out.write("".join(self._held))
            self._out.flush()
            self._held.clear()
            self._wrote_text = True


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
    as_json: bool = False,
    yes: bool = False,
    demo: bool = False,
) -> int:
    """Run one turn without the UI; the answer goes to stdout; returns the exit code."""
    return asyncio.run(_run(task, model, resume, as_json, yes, demo))


async def _run(
    task: str, model: str | None, resume: str | None, as_json: bool, yes: bool, demo: bool
) -> int:
    from hermes_tui.runtime import Runtime, load_config_for

    config = load_config_for(demo=demo, model=model)
    approve = (lambda _request: True) if yes else None
    workspace = Path(os.getcwd())
    try:
        prompt = _command_prompt(task, workspace, config.home)
    except LookupError as exc:
        print(f"hermes-tui: {safe_text(str(exc))}", file=sys.stderr)
        return 2
    printer = _Printer(as_json)
    async with Runtime.open(
        config, printer, approve, workspace=workspace, on_exit_wait=_waiting
    ) as runtime:
        result = await _turn(runtime.agent, task, resume, model, prompt)
    told = result.error in printer.told  # the cut-off or budget notice already said it
    if not as_json and result.status not in ("ok", "error") and result.error and not told:
        print(f"hermes-tui: {safe_text(result.error)}", file=sys.stderr)
    if not as_json and result.status == "stopped":
        print("hermes-tui: stopped.", file=sys.stderr)
    if not as_json and result.session_id:
        print(f"[session {result.session_id}]", file=sys.stderr)
    if runtime.not_saved is not None:
        print(f"hermes-tui: {safe_text(runtime.not_saved)}", file=sys.stderr)
        return 1
    return _STATUS_EXIT.get(result.status, 1)


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
    agent: Any, task: str, resume: str | None, model: str | None, prompt: Any = None
) -> Any:
    """The one turn of a headless run: `task` (a custom command's `prompt`), or the
    interrupted turn of `resume` (D4)."""
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
        if prompt is not None:
            return await asyncio.to_thread(
                agent.run_turn, prompt.text, shown=prompt.shown, model=prompt.model
            )
        if task.strip():
            return await asyncio.to_thread(agent.run_turn, task)
        if resume and agent.interrupted:
            # The previous run died mid-turn: continue it with a typed recovery note (D4).
            return await asyncio.to_thread(agent.continue_interrupted)
        raise LookupError(
            "Nothing to do: give a task, or --resume a session whose last turn was interrupted."
        )
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        signal.signal(signal.SIGINT, previous)


def _waiting(sentence: str) -> None:
    """The exit waits for another process's lock: say what for, at once."""
    print(f"hermes-tui: {safe_text(sentence)}", file=sys.stderr, flush=True)


def sessions_command(args: Any) -> int:
    """`hermes-tui sessions list|search`: print sessions or search hits."""
    return asyncio.run(_sessions(args))


async def _sessions(args: Any) -> int:
    from agent.config import load_config

    config = load_config()
    db = await open_store(config)
    try:
        if args.sessions_command == "reindex":
            rows = await db.rebuild_search_index()
            print(f"search index rebuilt: {rows} messages indexed")
            return 0
        if args.sessions_command == "list":
            rows = await db.list_sessions(limit=args.limit)
            items = [
                {
                    "id": r["id"],
                    "title": r["title"],
                    "updated_at": r["updated_at"],
                    "model": f"{r.get('provider')}:{r.get('model')}",
                    "messages": r.get("message_count", 0),
                }
                for r in rows
            ]
        else:
            rows = await db.search(args.query, limit=args.limit)
            items = [
                {
                    "id": r["session_id"],
                    "title": r["title"],
                    "updated_at": r["updated_at"],
                    "snippet": r["snippet"],
                }
                for r in rows
            ]
    finally:
        await db.close()
    if args.json:
        for item in items:
            print(json.dumps(item))
        return 0
    if not items:
        print("no sessions" if args.sessions_command == "list" else "no matches")
        return 0
    for item in items:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(item["updated_at"] or 0))
        # Titles and snippets are stored outside text: shown exactly, hidden characters too.
        extra = plain_snippet(safe_line(str(item.get("snippet") or item.get("model", ""))))
        title = safe_name(str(item["title"] or ""))
        print(f"{item['id']}  {when}  {title[:50]:<50}  {extra}")
    return 0
