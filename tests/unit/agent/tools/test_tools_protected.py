"""Protected paths: the list, how names are folded, and approval in each mode."""

from __future__ import annotations

import pytest

from agent.tools import ToolContext
from agent.tools.protected import fold, protected_reason
from agent.tools.registry import DECLINED

PROTECTED = [
    ".git/config",
    ".git/hooks/pre-commit",
    ".git",  # the .git file of a worktree or submodule
    "vendor/lib/.git/config",  # a nested repository
    "wt/.git",
    ".GIT/config",
    ".Git/hooks/post-checkout",
    ".g\u200cit/config",  # HFS+ ignores U+200C, so this is .git there
    ".git. /config",  # NTFS drops trailing dots and spaces
    "GIT~1/config",  # the NTFS short name
    ".envrc",
    "sub/.envrc",
    ".vscode/tasks.json",
    ".vscode/settings.json",
    ".vscode/launch.json",
    "team.code-workspace",
    ".idea/workspace.xml",
    ".devcontainer/devcontainer.json",
    ".devcontainer.json",
    ".husky/pre-commit",
    ".githooks/pre-push",
    ".pre-commit-config.yaml",
    ".exrc",
    ".nvim.lua",
    ".dir-locals.el",
    "bare/HEAD",
]
ORDINARY = [
    "README.md",
    "src/git.py",
    "docs/.gitignore",
    ".gitignore",
    ".gitattributes",
    ".github/workflows/ci.yml",
    "envrc.md",
    ".env",
    "Makefile",
    "vscode/tasks.json",
    "notes/head.md",
]


@pytest.mark.parametrize("rel", PROTECTED)
def test_listed_paths_are_protected(ws, rel):
    assert protected_reason(ws, rel.split("/"))


@pytest.mark.parametrize("rel", ORDINARY)
def test_ordinary_paths_are_not(ws, rel):
    assert protected_reason(ws, rel.split("/")) == ""


def test_a_directory_holding_head_looks_like_a_repository(ws):
    (ws / "x").mkdir()
    assert protected_reason(ws, ["x", "config"]) == ""
    (ws / "x" / "HEAD").write_text("ref: refs/heads/main\n")
    for rel in ("x/config", "x/hooks/post-checkout", "x/objects/ab"):
        assert "HEAD" in protected_reason(ws, rel.split("/")), rel


def test_fold_matches_case_insensitive_spellings():
    assert fold(".GIT") == fold(".git") == fold(".gi\u200dt") == fold(".git..") == ".git"
    assert fold("...") == "..."


# ---------------------------------------------------------------- approval


class Recorder:
    """An approve callback that records requests and answers a fixed value."""

    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.requests = []

    def __call__(self, request):
        self.requests.append(request)
        return self.answer


@pytest.mark.parametrize("mode", ["ask", "auto-edit"])
def test_protected_write_asks_and_says_why(reg, ws, mode):
    approve = Recorder(False)
    ctx = ToolContext(ws, approval_mode=mode, approve=approve)
    result = reg.run("write_file", {"path": ".git/hooks/pre-commit", "content": "x"}, ctx)
    assert (result.ok, result.output) == (False, DECLINED)
    [request] = approve.requests
    assert request.protected
    assert request.summary.startswith("protected path (runs code on its own): write_file ")
    assert request.detail.startswith("Protected path: git runs hooks")
    assert not (ws / ".git").exists()


def test_ordinary_write_in_auto_edit_does_not_ask(reg, ws):
    approve = Recorder(False)
    ctx = ToolContext(ws, approval_mode="auto-edit", approve=approve)
    assert reg.run("write_file", {"path": "notes.txt", "content": "x"}, ctx).ok
    assert approve.requests == []


def test_ordinary_write_in_ask_is_not_marked_protected(reg, ws):
    approve = Recorder(True)
    ctx = ToolContext(ws, approval_mode="ask", approve=approve)
    assert reg.run("write_file", {"path": "notes.txt", "content": "x"}, ctx).ok
    [request] = approve.requests
    assert not request.protected and "protected" not in request.summary + request.detail


def test_protected_edit_asks_in_auto_edit(reg, ws):
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n")
    approve = Recorder(True)
    ctx = ToolContext(ws, approval_mode="auto-edit", approve=approve)
    args = {"path": ".git/config", "old_string": "[core]", "new_string": "[core]\nx = 1"}
    assert reg.run("edit_file", args, ctx).ok
    [request] = approve.requests
    assert request.protected and request.tool == "edit_file"


def test_yolo_writes_protected_paths_without_asking(reg, ws):
    approve = Recorder(False)
    ctx = ToolContext(ws, approval_mode="yolo", approve=approve)
    assert reg.run("write_file", {"path": ".envrc", "content": "x"}, ctx).ok
    assert approve.requests == []


def test_no_approver_refuses_a_protected_write_with_its_reason(reg, ws):
    ctx = ToolContext(ws, approval_mode="auto-edit", approve=None)
    result = reg.run("write_file", {"path": ".vscode/tasks.json", "content": "{}"}, ctx)
    assert not result.ok
    assert result.output.startswith("Refused: .vscode/tasks.json is a protected path (an editor")
    assert "--yes" in result.output
    assert not (ws / ".vscode").exists()


def test_needs_approval_with_protected(reg):
    for mode in ("ask", "auto-edit", "no-such-mode"):
        assert reg.needs_approval("write_file", mode, protected=True)
    assert not reg.needs_approval("write_file", "yolo", protected=True)
    assert not reg.needs_approval("write_file", "auto-edit")


def test_a_link_to_a_protected_path_is_refused_not_written_through(reg, ws):
    (ws / ".git").mkdir()
    (ws / "notes").symlink_to(ws / ".git", target_is_directory=True)
    (ws / "README.md").symlink_to(ws / ".git" / "config")
    ctx = ToolContext(ws, approval_mode="auto-edit", approve=None)
    for raw, real in (("notes/config", ".git/config"), ("README.md", ".git/config")):
        result = reg.run("write_file", {"path": raw, "content": "x"}, ctx)
        assert not result.ok and f"give the real path {real}" in result.output, result.output
    assert not (ws / ".git" / "config").exists()


def test_dotdot_into_git_is_protected(reg, ws):
    (ws / "sub").mkdir()
    ctx = ToolContext(ws, approval_mode="auto-edit", approve=None)
    result = reg.run("write_file", {"path": "sub/../.git/config", "content": "x"}, ctx)
    assert not result.ok and ".git/config is a protected path" in result.output
