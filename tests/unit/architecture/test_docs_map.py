"""The module map in docs/modules.md names every module of the packages (issue 28, item 7).

The rule, kept simple: a module `pkg/sub/name.py` is on the map when its file name
`name.py` appears in the text of its folder's block in the map's code block, or its whole
path appears anywhere in the doc. A folder's block is its own entry (`tools/  registry.py
(...), files.py, ...`, with its continuation lines) and the entries indented below it, less
the blocks of its own subfolders: `storage/sessions.py` is not listed by
`hermes_tui/sessions.py`. `__init__.py` and `__main__.py` are not asked for: the map lists
packages by folder, and a `__main__` is its package's command line.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("agent", "storage", "hermes_tui")
MAP = Path("docs/modules.md")
NOT_ASKED = {"__init__.py", "__main__.py"}
ENTRY_INDENT = 12
"""An entry starts in the first columns; a line indented further continues its entry."""


def map_block(doc: str) -> list[str]:
    """The lines of the doc's first fenced code block: the map."""
    inside = doc.split("```", 2)[1]
    return inside.split("\n")[1:]


def folder_texts(lines: list[str]) -> dict[str, str]:
    """Each folder of the map ("agent/tools/") -> the text of its own block."""
    texts: dict[str, list[str]] = {}
    stack: list[tuple[int, str]] = []  # (indent, folder path) of the open folders
    for line in lines:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if indent < ENTRY_INDENT:
            while stack and stack[-1][0] >= indent:
                stack.pop()
            first = line.split()[0]
            if first.endswith("/"):
                parent = stack[-1][1] if stack else ""
                stack.append((indent, parent + first))
        if stack:
            texts.setdefault(stack[-1][1], []).append(line)
    return {folder: "\n".join(text) for folder, text in texts.items()}


def unmapped(root: Path) -> list[str]:
    """The modules of the packages under `root` that docs/modules.md does not name."""
    doc = (root / MAP).read_text(encoding="utf-8")
    texts = folder_texts(map_block(doc))
    missing = []
    for package in PACKAGES:
        for module in sorted((root / package).rglob("*.py")):
            if module.name in NOT_ASKED:
                continue
            path = module.relative_to(root).as_posix()
            folder = path[: -len(module.name)]
            named = re.compile(rf"(?<![\w/.]){re.escape(module.name)}\b")
            if path not in doc and not named.search(texts.get(folder, "")):
                missing.append(path)
    return missing


def test_every_module_is_on_the_map() -> None:
    """Every module of agent/, storage/ and hermes_tui/ is named in docs/modules.md."""
    assert unmapped(ROOT) == []


def test_a_planted_module_missing_from_the_map_is_reported(tmp_path: Path) -> None:
    """A module the map does not name is reported; one it names, or names by path, is not.

    `sessions.py` under storage/ is listed there, so it passes; the same name planted in
    agent/ is reported although another folder's block names it, and `agent/files.py` is
    reported although its subfolder tools/ lists a `files.py`.
    """
    (tmp_path / "docs").mkdir()
    (tmp_path / MAP).write_text(
        "# Modules\n\n```\n"
        "agent/\n"
        "  loop.py             the loop\n"
        "  tools/              registry.py (tools), files.py\n"
        "storage/\n"
        "  sessions.py         the sessions table\n"
        "hermes_tui/\n"
        "  app.py              the app; see also hermes_tui/extra.py\n"
        "```\n",
        encoding="utf-8",
    )
    planted = [
        "agent/__init__.py",
        "agent/__main__.py",
        "agent/loop.py",
        "agent/files.py",
        "agent/sessions.py",
        "agent/tools/registry.py",
        "agent/tools/files.py",
        "agent/tools/shell.py",
        "storage/sessions.py",
        "hermes_tui/app.py",
        "hermes_tui/extra.py",
        "hermes_tui/widgets/registry.py",
    ]
    for path in planted:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text('"""A module."""\n', encoding="utf-8")
    assert unmapped(tmp_path) == [
        "agent/files.py",
        "agent/sessions.py",
        "agent/tools/shell.py",
        "hermes_tui/widgets/registry.py",
    ]
