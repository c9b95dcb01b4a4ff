"""`/agents` (G1): every subagent type, built-in and from files, with its tools and model;
a file that cannot be a type is named with why."""

from __future__ import annotations

from types import SimpleNamespace

from hermes_tui import commands


class AgentsContext:
    """What /agents reads: the agent's workspace and tools, the app's home; notices kept."""

    def __init__(self, workspace, home, tools=("read_file", "list_dir", "glob", "grep")) -> None:
        self.config = SimpleNamespace(home=home)
        names = list(tools)
        self.agent = SimpleNamespace(
            workspace=workspace, registry=SimpleNamespace(names=lambda: names)
        )
        self.notices: list[tuple[str, str]] = []

    async def notice(self, text: str, level: str = "info") -> None:
        self.notices.append((text, level))


async def test_g1_agents_lists_the_built_in_type_and_says_how_to_add_one(tmp_path):
    """G1: with no type files, the built-in explore type, its read-only tools and model."""
    ctx = AgentsContext(tmp_path / "ws", tmp_path / "home")
    await commands.run(ctx, "/agents")
    [(text, level)] = ctx.notices
    assert level == "info"
    assert "  explore  (built-in)" in text
    assert "    tools: read_file, list_dir, glob, grep" in text
    assert "    model: the session's" in text
    assert ".hermes-tui/agents/NAME.md" in text


async def test_g1_agents_lists_the_type_files_and_names_the_bad_ones(tmp_path):
    """G1: project and user type files with their description, tools (one not offered
    here marked) and model; a project type hides a user one of its name; a bad file is
    named with its reason and the notice is a warning."""
    workspace, home = tmp_path / "ws", tmp_path / "home"
    project, user = workspace / ".hermes-tui" / "agents", home / "agents"
    project.mkdir(parents=True)
    user.mkdir(parents=True)
    (project / "reviewer.md").write_text(
        "---\ndescription: Reviews a diff.\ntools: [read_file, run_shell]\n"
        "model: local:qwen3-coder\n---\nReview.\n"
    )
    (user / "reviewer.md").write_text("---\ndescription: Mine.\n---\nReview mine.\n")
    (user / "broken.md").write_text("---\ntools: 3\n---\nbody\n")
    ctx = AgentsContext(workspace, home)
    await commands.run(ctx, "/agents")
    [(text, level)] = ctx.notices
    lines = text.splitlines()
    assert level == "warning"
    first = lines.index(next(line for line in lines if line.startswith("  reviewer  (project")))
    assert lines[first + 1 : first + 4] == [
        "    Reviews a diff.",
        "    tools: read_file, run_shell (not here)",
        "    model: local:qwen3-coder",
    ]
    assert any(line.startswith("  reviewer  (user") and "hidden" in line for line in lines)
    assert any("broken.md" in line and "`tools` must be a list" in line for line in lines)
    assert "  explore  (built-in)" in lines
    assert not any(".hermes-tui/agents/NAME.md" in line for line in lines)
