"""Z3, U6: `hermes-tui run` streams its answer into a pipe as it arrives; `--final` prints
only the final answer; a retry says on stderr that it replaced the partial text, and
`--json` marks it; SIGINT mid-answer exits 130 with a prefix of the answer printed.

Each run is a real `hermes-tui run` process against the scripted server over HTTP, its
stdout a pipe. A gate holds the server mid-answer: what the pipe shows while it is closed
was printed before the server sent the rest.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from contextlib import contextmanager

import pytest
from helpers import write_config
from waits import wait_until

from agent.scripted import Script, ScriptedServer

ANSWER = "The answer streams in small pieces, one after another, to the very end."
STARTED = 60.0
"""Bound on the child's start-up and first chunk (a loaded machine starts Python slowly)."""
REPLACED = "[retrying: the partial answer above is replaced]"


class Child:
    """A `hermes-tui run` process whose stdout and stderr are read as they arrive."""

    def __init__(self, home, workspace, *args: str) -> None:
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env["HERMES_TUI_HOME"] = str(home)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "hermes_tui", "run", *args],
            cwd=workspace,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self._out, self._err = bytearray(), bytearray()
        self._readers = [
            threading.Thread(target=self._drain, args=(pipe, into), daemon=True)
            for pipe, into in ((self.process.stdout, self._out), (self.process.stderr, self._err))
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _drain(pipe, into: bytearray) -> None:
        # os.read returns what the pipe holds now: no buffering of our own hides a chunk.
        while chunk := os.read(pipe.fileno(), 65536):
            into.extend(chunk)

    @property
    def out(self) -> str:
        """What stdout has shown so far."""
        return bytes(self._out).decode()

    @property
    def err(self) -> str:
        """What stderr has shown so far."""
        return bytes(self._err).decode()

    def finish(self, timeout: float = STARTED) -> int:
        """The exit code, once the process ended and both pipes were read to the end."""
        code = self.process.wait(timeout)
        for reader in self._readers:
            reader.join(10)
        return code

    def close(self) -> None:
        """Kill the process if it still runs, and close its pipes."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        for reader in self._readers:
            reader.join(10)
        self.process.stdout.close()
        self.process.stderr.close()


@pytest.fixture
def run(hermes_home, tmp_path):
    """Serve `replies`, then start `hermes-tui run *args` against them."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    started: list[tuple[ScriptedServer, Child]] = []

    @contextmanager
    def start(replies, *args):
        server = ScriptedServer(Script.from_dict({"replies": replies})).start()
        write_config(hermes_home, server, wire="openai")
        child = Child(hermes_home, workspace, *args)
        started.append((server, child))
        yield server, child

    yield start
    for server, child in started:
        child.close()
        server.stop()


def _held(after: int = 3) -> dict:
    """The answer in 6-character chunks, held by gate `rest` after `after` events (the
    role chunk, then text) until the test opens it."""
    return {"text": ANSWER, "chunk_size": 6, "gate": "rest", "gate_after": after}


def test_z3_the_first_chunk_reaches_a_pipe_before_the_server_sends_the_last(run):
    """Z3: into a pipe, the answer shows while the server still holds the rest of it."""
    with run([_held()], "explain") as (server, child):
        # The gate is closed: the server has sent two chunks and no more.
        shown = wait_until(lambda: child.out, timeout=STARTED, what="the first chunk on stdout")
        assert ANSWER.startswith(shown), shown
        assert len(shown) < len(ANSWER)
        server.open_gate("rest")
        assert child.finish() == 0, child.err
        assert child.out == ANSWER + "\n"


def test_z3_sigint_mid_answer_exits_130_with_a_prefix_of_the_answer(run):
    """Z3: SIGINT after the first chunk stops the run (130); stdout is what the server sent
    so far, a prefix of the answer, with nothing added or held back."""
    with run([_held()], "explain") as (_server, child):
        wait_until(lambda: child.out, timeout=STARTED, what="the first chunk on stdout")
        child.process.send_signal(signal.SIGINT)
        assert child.finish() == 130, child.err
        assert child.out and ANSWER.startswith(child.out), child.out
        assert "hermes-tui: stopped." in child.err


def test_u6_final_prints_only_the_final_answer(run):
    """U6: `--final` prints the last answer alone, once the turn ends: not the text the
    model wrote before its tool call, not a streamed piece of the answer."""
    look = {"name": "list_dir", "arguments": {"path": "."}}
    replies = [{"text": "Looking first.", "tool_calls": [look]}, _held()]
    with run(replies, "--final", "explain") as (server, child):
        wait_until(lambda: len(server.requests) >= 2, timeout=STARTED, what="the second call")
        assert child.out == ""  # the answer is not done: nothing yet
        server.open_gate("rest")
        assert child.finish() == 0, child.err
        assert child.out == ANSWER + "\n"
        assert "• " in child.err  # the tool call still shows on stderr


_DROPPED = {"text": "A partial answer that breaks off", "chunk_size": 4, "drop_after": 4}
"""Three chunks of text (after the role chunk), then the connection drops: retried (W8)."""


def test_z3_a_retried_attempt_says_on_stderr_that_its_partial_text_was_replaced(run):
    """Z3, W11: into a pipe the failed attempt's text has shown; one stderr line says the
    retry's answer replaces it, and that answer follows on a line of its own."""
    with run([_DROPPED, {"text": ANSWER}], "explain") as (_server, child):
        assert child.finish() == 0, child.err
    partial, answer = child.out.split("\n", 1)
    assert partial and _DROPPED["text"].startswith(partial), child.out
    assert answer == ANSWER + "\n"
    assert child.err.count(REPLACED) == 1, child.err


def test_z3_json_marks_the_text_a_retry_replaced(run):
    """Z3, W11: `--json` marks the retry: its StreamReset says how many characters of the
    streamed text so far the retry replaces, so a script can drop exactly those."""
    with run([_DROPPED, {"text": ANSWER}], "--json", "explain") as (_server, child):
        assert child.finish() == 0, child.err
    events = [json.loads(line) for line in child.out.splitlines()]
    kept: list[str] = []
    for event in events:
        if event["type"] == "TextDelta":
            kept.append(event["text"])
        elif event["type"] == "StreamReset":
            replaced = event["replaced_chars"]
            assert replaced > 0
            text = "".join(kept)
            assert _DROPPED["text"].startswith(text[len(text) - replaced :])
            kept = [text[: len(text) - replaced]]
    assert [e["type"] for e in events].count("StreamReset") == 1
    assert "".join(kept) == ANSWER
