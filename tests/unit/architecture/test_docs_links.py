"""Every relative link in README.md, ARCHITECTURE.md and docs/*.md resolves, anchors too.

No SPEC id covers the docs; this keeps the README's tour and the pages it points to joined
up as sections move between them. A link's file must exist, and its `#anchor` must be one
of that file's headings, slugged as GitHub slugs them (mdit-py-plugins' anchors plugin:
lower case, punctuation dropped, spaces to hyphens, `-1` on a repeated heading).
"""

from __future__ import annotations

from pathlib import Path

from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.anchors import anchors_plugin

ROOT = Path(__file__).resolve().parents[3]
EXTERNAL = ("http://", "https://", "mailto:")


def parser() -> MarkdownIt:
    """A GitHub-like Markdown parser that gives every heading its GitHub anchor."""
    return MarkdownIt("commonmark").enable("table").use(anchors_plugin, max_level=6)


def walk(tokens: list[Token]) -> list[Token]:
    """The tokens and their inline children, in order."""
    flat: list[Token] = []
    for token in tokens:
        flat.append(token)
        flat.extend(token.children or [])
    return flat


def anchors(path: Path) -> set[str]:
    """The anchors of a Markdown file's headings."""
    tokens = walk(parser().parse(path.read_text(encoding="utf-8")))
    return {str(t.attrs["id"]) for t in tokens if t.type == "heading_open" and "id" in t.attrs}


def links(path: Path) -> list[str]:
    """The targets of a Markdown file's links (code spans and blocks hold none)."""
    tokens = walk(parser().parse(path.read_text(encoding="utf-8")))
    return [str(t.attrs["href"]) for t in tokens if t.type == "link_open"]


def broken_links(root: Path, docs: list[Path]) -> list[str]:
    """Each relative link in `docs` whose file or anchor does not exist, as `doc: target`."""
    broken = []
    for doc in docs:
        for target in links(doc):
            if target.startswith(EXTERNAL):
                continue
            file_part, _, anchor = target.partition("#")
            linked = (doc.parent / file_part).resolve() if file_part else doc
            missing = not linked.exists()
            if missing or (anchor and linked.suffix == ".md" and anchor not in anchors(linked)):
                broken.append(f"{doc.relative_to(root)}: {target}")
    return broken


def markdown_docs(root: Path) -> list[Path]:
    """The README, ARCHITECTURE.md and the docs pages."""
    return [root / "README.md", root / "ARCHITECTURE.md", *sorted((root / "docs").glob("*.md"))]


def test_every_relative_link_resolves() -> None:
    """The README's and the docs pages' links reach a file and, when they name one, a heading."""
    assert broken_links(ROOT, markdown_docs(ROOT)) == []


def test_a_broken_link_and_a_broken_anchor_are_seen(tmp_path: Path) -> None:
    """The check sees a missing file and a missing heading, and passes GitHub-style anchors."""
    (tmp_path / "docs").mkdir()
    heading = "## Spend caps (`budget:`)\n\n"
    (tmp_path / "docs" / "a.md").write_text("# A\n\n" + heading * 2)
    (tmp_path / "README.md").write_text(
        "[ok](docs/a.md#spend-caps-budget) [ok](docs/a.md#spend-caps-budget-1) [ok](#r)\n"
        "[gone](docs/b.md) [no heading](docs/a.md#hooks) `[code](docs/c.md)`\n\n# R\n"
    )
    (tmp_path / "ARCHITECTURE.md").write_text("[web](https://example.com/x#y)\n")
    assert broken_links(tmp_path, markdown_docs(tmp_path)) == [
        "README.md: docs/b.md",
        "README.md: docs/a.md#hooks",
    ]
