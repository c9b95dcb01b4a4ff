"""Command-line entry point: the TUI (default), headless `run`, `acp`, sessions, scripted-server."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from agent.version import VERSION
from hermes_tui import exit_codes, startup_gc
from hermes_tui.exit_codes import UsageError

if TYPE_CHECKING:
    from agent.config import Config

NO_TASK = (
    'Give a task: hermes-tui run "fix the failing test", or pipe one in '
    "(echo task | hermes-tui run), or --resume ID / --continue a session."
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of `hermes-tui`."""
    parser = argparse.ArgumentParser(
        prog="hermes-tui",
        description="A terminal agent that works in your repository.",
    )
    parser.add_argument("--version", action="version", version=f"hermes-tui {VERSION}")
    parser.add_argument("--demo", action="store_true", help="use the built-in demo model")
    parser.add_argument("--model", help="provider:model for new sessions")
    parser.add_argument("--resume", metavar="ID", help="open a stored session (id or title)")
    parser.add_argument(
        "-c", "--continue", dest="continue_latest", action="store_true",
        help="open the session last used in this folder",
    )  # fmt: skip
    sub = parser.add_subparsers(dest="command")

    run = sub.add_parser("run", help="run one task headless and print the answer")
    run.add_argument(
        "task",
        nargs="?",
        default="",
        help="what the agent should do; piped stdin is the task when none is given, else "
        "context for it (omit with --resume to continue an interrupted turn)",
    )
    run.add_argument(
        "--model", dest="run_model", metavar="MODEL", help="provider:model for this run"
    )
    run.add_argument("--resume", dest="run_resume", metavar="ID", help="continue a session")
    run.add_argument(
        "-c", "--continue", dest="run_continue", action="store_true",
        help="continue the session last used in this folder",
    )  # fmt: skip
    shape = run.add_mutually_exclusive_group()
    shape.add_argument("--json", action="store_true", help="print events as JSON lines")
    shape.add_argument(
        "--final", action="store_true", help="print only the final answer, when the run ends"
    )
    run.add_argument("--yes", action="store_true", help="approve every tool call")
    run.add_argument(
        "--mode",
        dest="run_mode",
        metavar="MODE",
        help="approval mode for this run: ask, auto-edit, plan (prints the plan, changes "
        "nothing), or yolo (only with --yes)",
    )
    run.add_argument("--demo", dest="run_demo", action="store_true", help="use the demo model")

    sessions = sub.add_parser("sessions", help="list or search stored sessions")
    ssub = sessions.add_subparsers(
        dest="sessions_command", metavar="{list,search,reindex}", required=True
    )
    slist = ssub.add_parser("list", help="newest sessions first")
    slist.add_argument("--json", action="store_true", help="print the sessions as JSON")
    slist.add_argument("--limit", type=int, default=50, metavar="N", help="show at most N")
    ssearch = ssub.add_parser("search", help="full-text search over every session")
    ssearch.add_argument("query", help="words to find (SQLite FTS5 syntax)")
    ssearch.add_argument("--json", action="store_true", help="print the matches as JSON")
    ssearch.add_argument("--limit", type=int, default=50, metavar="N", help="show at most N")
    ssub.add_parser("reindex", help="rebuild the full-text search index from the messages")

    acp_cmd = sub.add_parser(
        "acp", help="serve editors over the Agent Client Protocol (stdio; Zed, Toad, Neovim)"
    )
    acp_cmd.add_argument("--model", dest="acp_model", metavar="MODEL", help="provider:model")
    acp_cmd.add_argument("--demo", dest="acp_demo", action="store_true", help="use the demo model")

    usage = sub.add_parser("usage", help="spend and tokens by day, model and project")
    usage.add_argument("--days", type=int, default=30, metavar="N", help="the last N days")
    usage.add_argument("--json", action="store_true", help="one JSON object per row")

    server = sub.add_parser("scripted-server", help="serve a model script (testing, demos)")
    server.add_argument("--script", required=True, help="a YAML script file")
    server.add_argument("--port", type=int, default=0, help="port to listen on (0: any free one)")
    server.add_argument("--host", default="127.0.0.1", help="address to listen on")
    server.add_argument("--certfile", help="serve https with this certificate (PEM)")
    server.add_argument("--keyfile", help="the certificate's private key (PEM)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code (hermes_tui/exit_codes.py)."""
    # The full-screen app: no collections until it is up (the app resumes them). Held
    # before the parser is built (its many sub-commands' objects filled a collection).
    startup_gc.hold()
    args = build_parser().parse_args(argv)
    if args.command is not None:
        startup_gc.release()  # headless, ACP and the rest run with the collector as usual
    if args.command != "scripted-server":
        _log_to_file()
    try:
        if args.command == "run":
            return _run_headless(args)
        if args.command == "acp":
            return _run_acp(args)
        if args.command == "sessions":
            from hermes_tui.headless import sessions_command

            return sessions_command(args)
        if args.command == "usage":
            from hermes_tui.headless import usage_command

            return usage_command(args.days, as_json=args.json)
        if args.command == "scripted-server":
            from agent.scripted.__main__ import main as server_main

            server_args = ["--script", args.script, "--port", str(args.port), "--host", args.host]
            if args.certfile:
                server_args += ["--certfile", args.certfile, "--keyfile", args.keyfile or ""]
            return server_main(server_args)
        return _run_tui(args)
    except UsageError as exc:
        from hermes_tui.safe_text import safe_text

        print(f"hermes-tui: {safe_text(str(exc))}", file=sys.stderr)
        return exit_codes.USAGE
    except KeyboardInterrupt:
        return exit_codes.STOPPED
    except BrokenPipeError:
        # The reader went away (`| head`): nothing to say to it; stdout is pointed at
        # /dev/null so the interpreter's own flush at exit does not complain either.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return exit_codes.ERROR
    except Exception as exc:  # the last line of defence: one sentence, no traceback
        from hermes_tui.headless import user_error
        from hermes_tui.safe_text import safe_text

        message = user_error(exc)
        if message is None:
            from hermes_tui.logfile import report_bug

            message = report_bug(exc)  # the traceback goes to the log file
        # The sentence may quote a config value, a server's reply or a session title.
        print(f"hermes-tui: {safe_text(message)}", file=sys.stderr)
        return exit_codes.ERROR


def _run_headless(args: argparse.Namespace) -> int:
    """`hermes-tui run`: the task from the arguments or stdin, stdin as its context."""
    from hermes_tui import piped_input
    from hermes_tui.headless import run_headless

    resume = args.run_resume or args.resume
    latest = args.run_continue or args.continue_latest
    if resume and latest:
        raise UsageError("Give --resume ID or --continue, not both.")
    task, context = args.task, None
    stdin = sys.stdin.buffer if sys.stdin is not None else None
    if stdin is not None and piped_input.is_piped(stdin):
        # No task: stdin is the task, waited for as long as it takes; a resumed session
        # may have a crashed turn to finish, so its silent stdin is waited for briefly.
        waits = None if not task.strip() and not (resume or latest) else piped_input.FIRST_BYTE_WAIT
        piped = piped_input.read_piped(stdin, wait_first=waits)
        if not task.strip():
            task = piped.text.strip()
        elif piped.text.strip():
            context = piped_input.context_block(piped)
        if (line := piped_input.attached_line(piped, as_task=not context)) is not None:
            print(f"hermes-tui: {line}", file=sys.stderr, flush=True)
    if not task.strip() and not (resume or latest):
        raise UsageError(NO_TASK)
    return run_headless(
        task,
        model=args.run_model or args.model,
        resume=resume,
        continue_latest=latest,
        context=context,
        as_json=args.json,
        final=args.final,
        yes=args.yes,
        demo=args.run_demo or args.demo,
        mode=run_mode(args.run_mode, args.yes),
    )


def _run_acp(args: argparse.Namespace) -> int:
    """`hermes-tui acp`: an ACP agent on stdin and stdout until the client closes them (E1)."""
    import asyncio

    from hermes_tui.acp.server import serve
    from hermes_tui.runtime import load_config_for

    config = load_config_for(demo=args.acp_demo or args.demo, model=args.acp_model or args.model)
    asyncio.run(serve(config))
    return exit_codes.OK


def run_mode(word: str | None, yes: bool) -> str | None:
    """`run --mode`'s mode, or None (the config's); a bad one is a usage error (N1).

    yolo runs every tool call unasked, so it needs `--yes` too: one flag is not enough.
    """
    if word is None:
        return None
    from agent.kinds import ApprovalMode
    from agent.modes import parse_mode

    mode = parse_mode(word)
    if mode is None:
        names = ", ".join(str(m) for m in ApprovalMode)
        raise UsageError(f"No mode called {word!r}; the modes are {names}.")
    if mode == ApprovalMode.YOLO and not yes:
        raise UsageError("--mode yolo runs every tool call unasked; add --yes to confirm it.")
    return str(mode)


def _log_to_file() -> None:
    """Library and app log records go to $HERMES_TUI_HOME/logs/, never to the terminal."""
    from agent.config import default_home
    from hermes_tui.logfile import setup_logging

    setup_logging(default_home())


def _run_tui(args: argparse.Namespace) -> int:
    """Run the full-screen app until the user quits, then say what was not saved."""
    from hermes_tui.runtime import load_config_for

    config = load_config_for(demo=args.demo, model=args.model)
    resume = args.resume
    if args.continue_latest:
        if resume:
            raise UsageError("Give --resume ID or --continue, not both.")
        resume = latest_session(config)
    from hermes_tui.app import HermesApp

    app = HermesApp(config, resume=resume)
    result = app.run()
    if app.stopped_background is not None:  # said, not an error (G2)
        from hermes_tui.safe_text import safe_text

        print(f"hermes-tui: {safe_text(app.stopped_background)}", file=sys.stderr)
    for note in app.exit_notes:
        print(f"hermes-tui: {note}", file=sys.stderr)
    if app.exit_notes:
        return exit_codes.ERROR
    return result if isinstance(result, int) else (app.return_code or 0)


def latest_session(config: Config) -> str:
    """The id of the session last used in this folder, for `--continue`."""
    import asyncio
    from pathlib import Path

    from hermes_tui.store import NOTHING_TO_CONTINUE, latest_session_here

    session_id = asyncio.run(latest_session_here(config, Path.cwd().resolve()))
    if session_id is None:
        raise LookupError(NOTHING_TO_CONTINUE)
    return session_id
