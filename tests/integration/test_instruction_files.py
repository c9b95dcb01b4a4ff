"""Instruction files in the system prompt over real HTTP and SQLite (SPEC P1, T7, C1)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from agent import events as ev
from agent.instructions import MAX_FILE_CHARS

SUMMARY_RULE = {"system_contains": "You summarise a conversation"}


def system_of(body: dict) -> str:
    """The system prompt of an OpenAI-wire request body."""
    first = body["messages"][0]
    assert first["role"] == "system"
    return first["content"]


def normal_bodies(harness) -> list[dict]:
    return [b for b in harness.bodies() if "You summarise a conversation" not in json.dumps(b)]


def repo_workspace(tmp_path: Path) -> tuple[Path, Path]:
    """A repository (its `.git` a folder) with the workspace two levels below its root."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    workspace = root / "packages" / "app"
    workspace.mkdir(parents=True)
    return root, workspace


def test_discovery_order_and_precedence(harness, hermes_home, tmp_path, monkeypatch):
    """P1: every instruction file of each folder is read (AGENTS.md, CLAUDE.md, .hermes.md
    in that order), root first, nearest last; nothing above the repository."""
    monkeypatch.setenv("HOME", str(tmp_path))
    root, workspace = repo_workspace(tmp_path)
    (hermes_home / "AGENTS.md").write_text("USER-LEVEL: answer in English.\n")
    (root / "AGENTS.md").write_text("ROOT: use tabs.\n")
    (root / "CLAUDE.md").write_text("ROOT-CLAUDE: read beside the root's AGENTS.md.\n")
    (root / "packages" / "CLAUDE.md").write_text("MIDDLE: the only file there.\n")
    (workspace / ".hermes.md").write_text("WORKSPACE-HERMES: the app's own name.\n")
    (workspace / "CLAUDE.md").write_text("WORKSPACE: use spaces, this wins over ROOT.\n")
    (tmp_path / "AGENTS.md").write_text("ABOVE THE REPOSITORY: never read.\n")
    harness.workspace = workspace
    agent = harness.start({"replies": [{"text": "ok"}]})
    agent.refresh_instructions()
    assert agent.run_turn("hi").status == "ok"
    system = system_of(harness.bodies()[0])
    marks = ("USER-LEVEL", "ROOT:", "ROOT-CLAUDE", "MIDDLE", "WORKSPACE:", "WORKSPACE-HERMES")
    order = [system.find(mark) for mark in marks]
    assert -1 not in order and order == sorted(order), system
    assert "ABOVE THE REPOSITORY" not in system
    assert "the later (nearer) file wins" in system
    shown = [f.shown for f in agent.context.files]
    assert shown == [
        "~/hermes-home/AGENTS.md",
        "../../AGENTS.md",
        "../../CLAUDE.md",
        "../CLAUDE.md",
        "CLAUDE.md",
        ".hermes.md",
    ]


def test_a_link_or_a_copy_beside_a_file_counts_once_under_both_names(harness):
    """P1 (issue 29): CLAUDE.md as a link to AGENTS.md, or a copy of its text, is read
    once; the file is listed under both names."""
    workspace = harness.workspace
    (workspace / "AGENTS.md").write_text("ONE RULE: run the tests.\n")
    (workspace / "CLAUDE.md").symlink_to("AGENTS.md")
    sub = workspace / "lib"
    sub.mkdir()
    (sub / "AGENTS.md").write_text("LIB RULE\n")
    (sub / "CLAUDE.md").write_text("LIB RULE\n")
    agent = harness.start({"replies": [{"text": "ok"}]})
    agent.refresh_instructions()
    agent.context.instructions.touch("lib/x.py")
    assert [f.listed for f in agent.context.files] == [
        "AGENTS.md = CLAUDE.md",
        "lib/AGENTS.md = lib/CLAUDE.md",
    ]
    system = agent.request().system
    assert system.count("ONE RULE") == 1 and system.count("LIB RULE") == 1
    assert "## AGENTS.md (also CLAUDE.md)" in system


def test_a_file_that_appears_beside_another_is_named_alone(harness):
    """P1 (issue 29): AGENTS.md written where only CLAUDE.md was: both are in effect, and
    the re-read row names AGENTS.md as new, never CLAUDE.md, which did not change."""
    workspace = harness.workspace
    (workspace / "CLAUDE.md").write_text("CLAUDE RULES\n")
    agent = harness.start({"replies": [{"text": "one"}, {"text": "two"}, {"text": "three"}]})
    agent.refresh_instructions()
    assert agent.run_turn("first").status == "ok"
    (workspace / "AGENTS.md").write_text("AGENTS RULES\n")
    assert agent.run_turn("second").status == "ok"
    (workspace / "AGENTS.md").write_text("CLAUDE RULES\n")  # now a copy: counted once
    assert agent.run_turn("third").status == "ok"
    systems = [system_of(b) for b in harness.bodies()]
    assert "CLAUDE RULES" in systems[1] and "AGENTS RULES" in systems[1]
    assert systems[2].count("CLAUDE RULES") == 1
    rows = [r for r in harness.rows(agent.session_id) if r["display_kind"] == "instructions"]
    assert [r["display_metadata"] for r in rows] == [
        {"added": ["AGENTS.md"]},
        {"changed": ["AGENTS.md"]},
    ]


def test_without_a_repository_only_the_workspace_file_is_read(harness, tmp_path):
    (tmp_path / "AGENTS.md").write_text("PARENT OUTSIDE ANY REPOSITORY\n")
    (harness.workspace / "AGENTS.md").write_text("WORKSPACE ONLY\n")
    agent = harness.start({"replies": [{"text": "ok"}]})
    assert agent.run_turn("hi").status == "ok"
    system = system_of(harness.bodies()[0])
    assert "WORKSPACE ONLY" in system and "PARENT OUTSIDE" not in system


def test_the_request_prefix_is_byte_identical_across_turns(harness):
    (harness.workspace / "AGENTS.md").write_text("Run `make test` before you say done.\n")
    agent = harness.start({"replies": [{"text": "one"}, {"text": "two"}, {"text": "three"}]})
    agent.refresh_instructions()
    for text in ("first", "second", "third"):
        assert agent.run_turn(text).status == "ok"
    raws = [r.raw for r in harness.server.requests]
    bodies = harness.bodies()
    for earlier, later, raw_earlier, raw_later in zip(
        bodies, bodies[1:], raws, raws[1:], strict=False
    ):
        assert later["messages"][: len(earlier["messages"])] == earlier["messages"]
        assert later["tools"] == earlier["tools"]
        # The bytes on the wire: everything up to the end of the earlier request's last
        # message is the same in the later one (the provider's cache prefix, T7).
        last = json.dumps(earlier["messages"][-1], separators=(",", ":"))
        end = raw_earlier.find(last.encode()) + len(last)
        assert end > len(last) and raw_later[:end] == raw_earlier[:end]
    assert "make test" in system_of(bodies[0])


def test_a_change_on_disk_is_read_before_the_next_turn(harness):
    instructions = harness.workspace / "AGENTS.md"
    instructions.write_text("VERSION ONE\n")
    agent = harness.start({"replies": [{"text": "one"}, {"text": "two"}, {"text": "three"}]})
    agent.refresh_instructions()
    assert agent.run_turn("first").status == "ok"
    instructions.write_text("VERSION TWO\n")
    assert agent.run_turn("second").status == "ok"
    instructions.unlink()
    assert agent.run_turn("third").status == "ok"
    systems = [system_of(b) for b in harness.bodies()]
    assert "VERSION ONE" in systems[0] and "VERSION TWO" not in systems[0]
    assert "VERSION TWO" in systems[1] and "VERSION ONE" not in systems[1]
    assert "VERSION" not in systems[2]
    rows = [r for r in harness.rows(agent.session_id) if r["display_kind"] == "instructions"]
    assert [r["display_metadata"] for r in rows] == [
        {"changed": ["AGENTS.md"]},
        {"removed": ["AGENTS.md"]},
    ]


def test_a_subdirectory_file_joins_on_first_touch_once_and_again_on_resume(harness):
    workspace = harness.workspace
    (workspace / "src" / "deep").mkdir(parents=True)
    (workspace / "src" / "AGENTS.md").write_text("SRC RULES: no print statements.\n")
    (workspace / "src" / "deep" / "a.py").write_text("x = 1\n")
    (workspace / "docs").mkdir()
    (workspace / "docs" / "AGENTS.md").write_text("DOCS RULES: never touched.\n")
    read = {"id": "r1", "name": "read_file", "arguments": {"path": "src/deep/a.py"}}
    again = {"id": "r2", "name": "list_dir", "arguments": {"path": "src"}}
    agent = harness.start(
        {
            "replies": [
                {"text": "reading", "tool_calls": [read]},
                {"text": "listing", "tool_calls": [again]},
                {"text": "done"},
                {"text": "resumed answer"},
            ]
        }
    )
    assert agent.run_turn("look at a.py").status == "ok"
    systems = [system_of(b) for b in harness.bodies()]
    assert "SRC RULES" not in systems[0]
    assert "SRC RULES" in systems[1] and "SRC RULES" in systems[2]
    assert systems[1] == systems[2]
    assert all("DOCS RULES" not in s for s in systems)
    joined = [e for e in harness.events if isinstance(e, ev.DisplayRow)]
    assert [(e.kind, dict(e.metadata)) for e in joined] == [
        ("instructions", {"joined": "src/AGENTS.md", "dir": "src"})
    ]
    session_id = agent.session_id
    other = harness.agent()
    other.resume(session_id)
    assert other.run_turn("and now?").status == "ok"
    assert "SRC RULES" in system_of(harness.bodies()[-1])
    other.new_session()
    assert "SRC RULES" not in other.request().system


def test_the_files_survive_compact_word_for_word(harness):
    text = "KEEP ME VERBATIM: build with `make`, test with `make check`.\n" * 3
    (harness.workspace / "AGENTS.md").write_text(text)
    replies = [{"text": f"answer {i} " + "words " * 40} for i in range(6)]
    replies.insert(0, {"match": SUMMARY_RULE, "text": "SUMMARY of the start."})
    agent = harness.start({"replies": replies}, compression={"protect_first": 1, "keep_recent": 2})
    agent.refresh_instructions()
    for i in range(4):
        assert agent.run_turn(f"question {i} " + "filler " * 40).status == "ok"
    result = agent.compact()
    assert result.ok, result.message
    assert agent.run_turn("after the compaction").status == "ok"
    last = normal_bodies(harness)[-1]
    assert text.strip() in system_of(last)
    assert "SUMMARY of the start." in json.dumps(last["messages"])


def test_a_long_file_is_capped_with_a_notice(harness):
    (harness.workspace / "AGENTS.md").write_text("rule line\n" * (MAX_FILE_CHARS // 5))
    agent = harness.start({"replies": [{"text": "ok"}]})
    agent.refresh_instructions()
    notices = [e.text for e in harness.events if isinstance(e, ev.Notice)]
    assert any("AGENTS.md is" in n and "only its first" in n for n in notices), notices
    assert len(agent.context.files[0].text) <= MAX_FILE_CHARS
    agent.refresh_instructions()
    again = [e.text for e in harness.events if isinstance(e, ev.Notice)]
    assert again == notices  # told once


def test_a_fifo_or_a_binary_file_is_skipped_with_a_notice_and_never_hangs(harness):
    os.mkfifo(harness.workspace / "AGENTS.md")
    sub = harness.workspace / "bin"
    sub.mkdir()
    (sub / "AGENTS.md").write_bytes(b"\x7fELF\x00\x00binary")
    agent = harness.start({"replies": [{"text": "ok"}]})
    agent.refresh_instructions()
    agent.context.instructions.touch("bin/tool")
    agent.context.touched([])
    notices = [e.text for e in harness.events if isinstance(e, ev.Notice)]
    assert "Skipped AGENTS.md: it is not a regular file." in notices
    assert "Skipped bin/AGENTS.md: it is a binary file." in notices
    assert agent.context.files == ()


def test_a_subfolder_whose_first_file_is_unusable_joins_with_the_next(harness):
    """P1 (issue 29): a FIFO named AGENTS.md does not keep the folder's CLAUDE.md out."""
    sub = harness.workspace / "tools"
    sub.mkdir()
    os.mkfifo(sub / "AGENTS.md")
    (sub / "CLAUDE.md").write_text("TOOLS RULE\n")
    agent = harness.start({"replies": [{"text": "ok"}]})
    agent.refresh_instructions()
    joined = agent.context.instructions.touch("tools/run.sh")
    assert [f.shown for f in joined] == ["tools/CLAUDE.md"]
    assert "TOOLS RULE" in agent.request().system
    assert agent.context.instructions.take_notices() == (
        "Skipped tools/AGENTS.md: it is not a regular file.",
    )
