"""A workspace that changes under the file tools: a directory swapped for a symlink to outside
between the check and the write (deterministically, in the approval), and at random against
a swapping thread. Nothing may land outside, and nothing from outside may be read."""

from __future__ import annotations

import contextlib
import itertools
import os
import sys
import threading
import time
from pathlib import Path

import pytest
from integration.conftest import Harness

from agent.tools import ToolContext, default_registry


@pytest.fixture
def tree(tmp_path):
    """A workspace with a directory `d`, and an `outside` directory holding a secret."""
    workspace = tmp_path / "ws"
    (workspace / "d").mkdir(parents=True)
    (workspace / "d" / "inside.txt").write_text("inside\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret\n")
    return workspace.resolve(), outside


def outside_names(outside: Path) -> list[str]:
    return sorted(p.name for p in outside.iterdir())


def swap_for_link(workspace: Path, outside: Path) -> None:
    """Put the directory `d` aside and put a symlink to `outside` in its place."""
    os.rename(workspace / "d", workspace / "d.real")
    os.symlink(outside, workspace / "d")


# ---------------------------------------------------------------- in the approval dialog


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("write_file", {"path": "d/new.txt", "content": "pwned\n"}),
        ("write_file", {"path": "d/secret.txt", "content": "pwned\n"}),
        ("edit_file", {"path": "d/inside.txt", "old_string": "inside", "new_string": "pwned"}),
    ],
)
def test_a_directory_swapped_for_a_link_while_the_dialog_is_open(hermes_home, tree, tool, args):
    """H4: a target that changed since it was approved (a symlink now) is refused."""
    workspace, outside = tree
    asked = []

    def approve(request):
        # The user reads the dialog; meanwhile the directory becomes a link to outside.
        asked.append(request)
        swap_for_link(workspace, outside)
        return True

    harness = Harness(hermes_home, workspace)
    try:
        script = {
            "replies": [
                {"tool_calls": [{"id": "c1", "name": tool, "arguments": args}]},
                {"text": "ok"},
            ]
        }
        harness.start(script, agent={"approval": "ask"})
        agent = harness.agent(approve=approve)
        agent.run_turn("write into d")
        told = harness.bodies()[1]["messages"][-1]
    finally:
        harness.close()
    assert len(asked) == 1
    assert outside_names(outside) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "top secret\n"
    assert told["role"] == "tool"
    assert told["content"] == (
        "Refused: d changed since it was checked (it is now a symbolic link); "
        "nothing was written or read. Look at the path again and retry."
    )


# ---------------------------------------------------------------- at random


class Swapper:
    """A thread that keeps swapping the directory `d` and a symlink to outside."""

    def __init__(self, workspace: Path, outside: Path) -> None:
        self.workspace, self.outside = workspace, outside
        self.swaps = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        # The tools may create `d` again while it is away, so each round puts the directory
        # aside under a fresh name and brings in a new one rather than moving it back.
        d, link, fresh = (self.workspace / n for n in ("d", "d.link", "d.fresh"))
        # A fresh aside name for every attempt: one named after the swap count was taken by
        # the last round whenever a round failed (the tools had made `d` again), so every
        # later rename failed too and the swapper stalled for the rest of the run.
        asides = itertools.count()
        while not self._stop.is_set():
            with contextlib.suppress(OSError):
                os.symlink(self.outside, link)
            with contextlib.suppress(OSError):
                os.mkdir(fresh)
            with contextlib.suppress(OSError):
                os.rename(d, self.workspace / f"d.aside{next(asides)}")
            try:
                os.rename(link, d)
            except OSError:
                continue
            self.swaps += 1
            time.sleep(0)  # let the tools run while `d` is the link
            with contextlib.suppress(OSError):
                os.unlink(d)
                os.rename(fresh, d)
            time.sleep(0)  # and while it is a directory again

    def __enter__(self) -> Swapper:
        # A short switch interval makes the threads interleave inside each tool call.
        self._interval = sys.getswitchinterval()
        sys.setswitchinterval(1e-5)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(10)
        sys.setswitchinterval(self._interval)


def race(tree, calls: int, budget: float) -> tuple[list, Swapper]:
    """Run `calls` rounds of writes, edits and reads against a swapper; return results."""
    workspace, outside = tree
    registry = default_registry()
    ctx = ToolContext(workspace, approval_mode="yolo")
    results = []
    deadline = time.monotonic() + budget
    with Swapper(workspace, outside) as swapper:
        for i in range(calls):
            if time.monotonic() > deadline:
                break
            kind = i % 4
            if kind == 0:
                args = {"path": f"d/w{i}.txt", "content": "pwned\n"}
                results.append(("write", registry.run("write_file", args, ctx)))
            elif kind == 1:
                args = {"path": "d/secret.txt", "content": "pwned\n"}
                results.append(("overwrite", registry.run("write_file", args, ctx)))
            elif kind == 2:
                args = {"path": "d/secret.txt"}
                results.append(("read", registry.run("read_file", args, ctx)))
            else:
                results.append(("grep", registry.run("grep", {"pattern": "secret"}, ctx)))
    return results, swapper


def check_race(tree, results, swapper) -> None:
    _workspace, outside = tree
    assert swapper.swaps > 10, "the swapper hardly ran; the race was not exercised"
    assert outside_names(outside) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "top secret\n"
    for kind, result in results:
        assert "top secret" not in result.output, (kind, result)
        assert "Traceback" not in result.output
        if not result.ok and kind != "read":
            assert result.output.startswith(("Refused:", "Could not")), (kind, result)
    writes = [r for kind, r in results if kind == "write"]
    assert any(r.ok for r in writes), "no write got through at all"


def test_four_hundred_writes_against_a_swapper_land_none_outside(tree):
    """H4: no write follows a symlink swapped in at any component, however timed."""
    results, swapper = race(tree, 400, budget=8.0)
    assert len(results) >= 200
    check_race(tree, results, swapper)


@pytest.mark.slow
def test_five_thousand_calls_against_a_swapper(tree):
    results, swapper = race(tree, 5_000, budget=60.0)
    check_race(tree, results, swapper)
