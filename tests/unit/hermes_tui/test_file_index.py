"""The `@` picker's index and ranking: gitignore-aware, folders too, fuzzy (SPEC P2)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from hermes_tui.completion.fuzzy import Ranker
from hermes_tui.completion.index import FileIndex, list_walk, with_folders


def tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_a_walk_honours_every_gitignore_on_the_way(tmp_path):
    root = tree(
        tmp_path / "ws",
        {
            ".gitignore": "*.log\nbuild/\n!keep.log\n",
            "app.py": "",
            "debug.log": "",
            "keep.log": "",
            "build/out.bin": "",
            "src/.gitignore": "generated.py\n",
            "src/main.py": "",
            "src/generated.py": "",
            "src/deep/generated.py": "",
            "docs/build": "a file named build is no folder",
        },
    )
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("")
    listed = list_walk(root)
    assert sorted(listed) == [
        ".gitignore",
        "app.py",
        "docs/build",
        "keep.log",
        "src/.gitignore",
        "src/main.py",
    ]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_git_work_tree_is_listed_by_git_with_its_excludes(tmp_path):
    root = tree(
        tmp_path / "repo",
        {".gitignore": "*.tmp\n", "a.py": "", "b.tmp": "", "secret/key.pem": "", "lib/c.py": ""},
    )
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "exclude").write_text("secret/\n")
    index = FileIndex(root)
    paths = index.build()
    assert sorted(paths) == [".gitignore", "a.py", "lib/", "lib/c.py"]
    sub = FileIndex(root / "lib")
    assert sub.build() == ("c.py",)


def test_a_refresh_runs_off_the_calling_thread_and_swaps_the_list_whole(tmp_path):
    root = tree(tmp_path / "ws", {"one.txt": ""})
    built: list[tuple[str, ...]] = []
    index = FileIndex(root, on_built=lambda i: built.append(i.paths))
    assert not index.ready
    index.refresh()
    assert index.wait(10) and index.ready and built == [("one.txt",)]
    (root / "two.txt").write_text("")
    index.refresh()  # asked again within the stale window: skipped
    index.wait(10)
    assert index.paths == ("one.txt",)
    index.refresh(force=True)
    index.wait(10)
    assert sorted(index.paths) == ["one.txt", "two.txt"] and index.version == 2


def test_folders_follow_the_files_once_each():
    assert with_folders(["a/b/c.py", "a/d.py", "e.py"]) == [
        "a/b/c.py",
        "a/d.py",
        "e.py",
        "a/",
        "a/b/",
    ]


def test_ranking_puts_name_matches_first_and_narrowing_matches_a_fresh_ranking():
    paths = (
        "docs/apparatus.md",
        "src/app.py",
        "src/widgets/app_bar.py",
        "tests/test_app.py",
        "src/mapper/plan.py",
        "README.md",
        "src/",
        "src/widgets/",
    )
    ranker = Ranker()
    ranker.use(1, paths)
    assert ranker.rank("app")[0] == "src/app.py"
    assert "README.md" not in ranker.rank("app")
    assert ranker.rank("")[:2] == ["README.md", "src/"]
    for query in ("s", "sr", "src", "src/w", "src/wi"):
        narrowed = ranker.rank(query)
        fresh = Ranker()
        fresh.use(1, paths)
        assert narrowed == fresh.rank(query), query
    assert ranker.rank("src/wi")[0] == "src/widgets/"
    assert ranker.rank("zzz") == []
    assert ranker.rank("APP")[0] == "src/app.py"


def test_a_finished_turn_lists_again_within_the_stale_window(tmp_path):
    """P2: a turn that wrote files and ended right after the picker's last build still has its
    files listed (the stale window is for repeated opens of the picker, not for a turn)."""
    from types import SimpleNamespace

    from agent import events as ev
    from agent.config import load_config
    from agent.kinds import TurnStatus
    from hermes_tui.completion.controller import CompletionController

    root = tree(tmp_path / "ws", {"one.txt": ""})
    (tmp_path / "home").mkdir()
    app = SimpleNamespace(workspace=root, config=load_config(tmp_path / "home", demo=True))
    controller = CompletionController(app)
    controller.index.on_built = None
    controller.index.refresh()
    assert controller.index.wait(10) and controller.index.ready
    (root / "written-by-the-turn.txt").write_text("")
    [(kind, handler)] = list(controller.routes())
    assert kind is ev.TurnFinished
    handler(ev.TurnFinished(TurnStatus.OK, ""))
    assert controller.index.wait(10)
    assert "written-by-the-turn.txt" in controller.index.paths
