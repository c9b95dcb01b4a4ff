"""Headless reads stdin and keeps its word (issue 29 item 8, SPEC U6): piped stdin is the
task or its context, `-c/--continue`, one exit-code table, `sessions list --limit`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from headless_inprocess import run_cli_in_process
from helpers import write_config

from agent.scripted import Script, ScriptedServer
from hermes_tui import exit_codes, piped_input

ROOT = Path(__file__).resolve().parents[2]


def hermes(home, cwd, *args, stdin=subprocess.DEVNULL, input=None, timeout=60):
    """`hermes-tui ARGS` in its own process (bounded), stdin as given."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["HERMES_TUI_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "hermes_tui", *args],
        input=input,
        stdin=None if input is not None else stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
    )


def hermes_here(home, cwd, *args):
    """`hermes-tui ARGS` in this test process, stdin at /dev/null: for the checks that are
    about a run's words and sessions rather than its stdin (tests/headless_inprocess.py)."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["HERMES_TUI_HOME"] = str(home)
    return run_cli_in_process(list(args), env=env, cwd=cwd)


@pytest.fixture
def server(hermes_home):
    served = ScriptedServer(Script.from_dict({"replies": [{"text": "done."}] * 4})).start()
    write_config(hermes_home, served)
    yield served
    served.stop()


def user_text(request) -> str:
    return next(m for m in reversed(request.body["messages"]) if m["role"] == "user")["content"]


def test_piped_stdin_is_the_task_when_none_is_given(hermes_home, tmp_path, server):
    """U6: `echo task | hermes-tui run` runs the piped text (it was a usage error)."""
    proc = hermes(hermes_home, tmp_path, "run", input="fix the flaky test\n")
    assert proc.returncode == exit_codes.OK, proc.stderr
    assert proc.stdout.strip() == "done."
    assert user_text(server.requests[0]) == "fix the flaky test"


def test_piped_stdin_is_context_for_a_given_task_and_said_on_stderr(hermes_home, tmp_path, server):
    """U6: `cat log | hermes-tui run "summarise this"` attaches the log (it was dropped)."""
    proc = hermes(hermes_home, tmp_path, "run", "summarise this", input="line one\nline two\n")
    assert proc.returncode == exit_codes.OK, proc.stderr
    sent = user_text(server.requests[0])
    assert sent.startswith("summarise this\n\n<piped_input")
    assert "line one\nline two" in sent
    said = [line for line in proc.stderr.splitlines() if "stdin" in line]
    assert said == ["hermes-tui: attached stdin: 18 characters."]


def test_piped_context_is_capped_and_the_cap_is_said(hermes_home, tmp_path, server):
    """U6: a long pipe is cut at the cap (an endless one too), said in one line."""
    many = "".join(f"log line {n}\n" for n in range(30_000))  # about 400,000 characters
    proc = hermes(hermes_home, tmp_path, "run", "summarise this", input=many)
    assert proc.returncode == exit_codes.OK, proc.stderr
    sent = user_text(server.requests[0])
    assert piped_input.CAP_CHARS < len(sent) < piped_input.CAP_CHARS + 500
    assert "stdin held more than 100,000 characters" in sent
    said = [line for line in proc.stderr.splitlines() if "stdin" in line]
    assert len(said) == 1 and "the cap" in said[0], proc.stderr


def test_an_endless_pipe_is_read_to_its_cap_only(hermes_home, tmp_path, server):
    """U6: `yes | hermes-tui run "task"` ends: stdin is read to the cap, not to its end."""
    env = {**os.environ, "HERMES_TUI_HOME": str(hermes_home)}
    yes = subprocess.Popen(["yes", "again"], stdout=subprocess.PIPE)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "hermes_tui", "run", "count them"],
            stdin=yes.stdout,
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=60,
        )
    finally:
        yes.kill()
        yes.wait(timeout=10)
    assert proc.returncode == exit_codes.OK, proc.stderr
    assert "the cap" in proc.stderr


def test_a_silent_stdin_is_waited_for_briefly_and_said(hermes_home, tmp_path, server):
    """U6: an open pipe nobody writes to does not hang a run with a task."""
    reader, writer = os.pipe()
    try:
        started = time.monotonic()
        proc = hermes(hermes_home, tmp_path, "run", "hello", stdin=reader)
        took = time.monotonic() - started
    finally:
        os.close(reader)
        os.close(writer)
    assert proc.returncode == exit_codes.OK, proc.stderr
    assert user_text(server.requests[0]) == "hello"
    assert "stdin sent nothing in 3 s: running without it" in proc.stderr
    assert took < piped_input.FIRST_BYTE_WAIT + 30


def test_an_empty_stdin_without_a_task_is_bad_usage(hermes_home, tmp_path):
    proc = hermes(hermes_home, tmp_path, "run", input="  \n")
    assert proc.returncode == exit_codes.USAGE == 2
    assert proc.stderr.count("\n") == 1 and "pipe one in" in proc.stderr


def test_continue_resumes_the_latest_session_of_this_folder(hermes_home, tmp_path, server):
    """U6: `run -c` continues this folder's last session, not another folder's newer one."""
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    first = hermes_here(hermes_home, here, "run", "remember the number 7")
    assert first.returncode == 0, first.stderr
    elsewhere = hermes_here(hermes_home, there, "run", "something else")
    assert elsewhere.returncode == 0, elsewhere.stderr
    proc = hermes_here(hermes_home, here, "run", "-c", "what was the number?")
    assert proc.returncode == 0, proc.stderr
    history = [m["content"] for m in server.requests[2].body["messages"] if m["role"] == "user"]
    assert history == ["remember the number 7", "what was the number?"]
    session = re.search(r"\[session (\w+)\]", first.stderr).group(1)
    assert f"[session {session}]" in proc.stderr


def test_continue_with_no_session_here_is_one_sentence(hermes_home, tmp_path, server):
    proc = hermes_here(hermes_home, tmp_path, "run", "--continue", "hi")
    assert proc.returncode == exit_codes.ERROR, proc.stderr
    assert proc.stderr.startswith("hermes-tui: No session to continue in this folder")
    assert proc.stderr.count("\n") == 1 and not server.requests


@pytest.mark.parametrize("model", ["bogus", "nosuch:model"])
def test_an_unknown_model_is_bad_usage(hermes_home, tmp_path, server, model):
    """U6: bad usage is exit 2, an unknown `--model` included (it was 1)."""
    proc = hermes_here(hermes_home, tmp_path, "run", "--model", model, "hi")
    assert proc.returncode == exit_codes.USAGE == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


def test_sessions_list_says_when_it_stopped_at_its_limit(hermes_home, tmp_path, server):
    for task in ("one", "two"):
        assert hermes_here(hermes_home, tmp_path, "run", task).returncode == 0
    cut = hermes_here(hermes_home, tmp_path, "sessions", "list", "--limit", "1")
    assert cut.returncode == 0, cut.stderr
    assert len(cut.stdout.splitlines()) == 1 and "two" in cut.stdout
    assert (
        cut.stderr == "hermes-tui: stopped at --limit 1; there are more (--limit 2 shows more).\n"
    )
    whole = hermes_here(hermes_home, tmp_path, "sessions", "list", "--limit", "2", "--json")
    assert len(whole.stdout.splitlines()) == 2 and whole.stderr == ""
    bad = hermes_here(hermes_home, tmp_path, "sessions", "list", "--limit", "0")
    assert bad.returncode == exit_codes.USAGE and bad.stderr.count("\n") == 1


def test_the_documented_exit_codes_are_the_table_the_code_uses():
    """U6: docs/headless.md's exit-code table (the one copy; the README links to it) is
    exit_codes.TABLE."""
    assert "docs/headless.md#exit-codes" in (ROOT / "README.md").read_text(encoding="utf-8")
    for doc in (ROOT / "docs" / "headless.md",):
        text = doc.read_text(encoding="utf-8")
        # The table under a `| code | meaning |` (or `exit code`) header; other tables (the
        # hooks' exit codes) are not the app's.
        table = re.search(
            r"^\| (?:exit )?code \| meaning \|\n\|---\|---\|\n((?:\|.*\|\n)+)", text, re.M
        )
        assert table is not None, f"{doc}: no exit-code table"
        rows = re.findall(r"^\| (\d+) \| (.+?) \|$", table.group(1), re.M)
        assert [(int(code), words) for code, words in rows] == list(exit_codes.TABLE), doc
    assert set(exit_codes.BY_STATUS.values()) <= {code for code, _ in exit_codes.TABLE}


def test_the_app_continues_the_latest_session_of_this_folder(hermes_home, tmp_path, monkeypatch):
    """U6: `hermes-tui -c` opens the session last updated in the folder it starts in."""
    import asyncio

    from agent.config import load_config
    from hermes_tui.cli import latest_session
    from hermes_tui.store import open_store

    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    config = load_config(demo=True)

    async def sessions() -> str:
        db = await open_store(config)
        try:
            mine = await db.create_session(model="m", provider="demo", workspace=str(here))
            await db.create_session(model="m", provider="demo", workspace=str(there))
            return mine["id"]
        finally:
            await db.close()

    mine = asyncio.run(sessions())
    monkeypatch.chdir(here)
    assert latest_session(config) == mine
    monkeypatch.chdir(tmp_path)
    with pytest.raises(LookupError, match="No session to continue in this folder"):
        latest_session(config)
