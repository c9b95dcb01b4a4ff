"""Stored sessions of long Markdown answers for `bench longsession` (Z2, U5)."""

from __future__ import annotations

from typing import Any

ANSWER_LINES = 300
"""Lines in one long answer (headings, paragraphs, lists and code blocks)."""


def long_answer(n: int) -> str:
    """A 300-line Markdown answer of about 25 KB, with a code block in every part."""
    lines: list[str] = []
    part = 0
    while len(lines) < ANSWER_LINES:
        part += 1
        lines += [
            f"## Part {part} of answer {n}",
            "",
            f"This part explains **step {part}**: the `parse_{part}` function reads the input,",
            "checks every field against the schema and returns the rows it could read, so a",
            "caller never sees a half-built record. The loop below is the whole of it.",
            "",
            f"- keeps the order of the input rows (part {part})",
            "- stops at the first bad field and says which one",
            "- returns `None` for an empty input instead of raising",
            "",
            "```python",
            f"def parse_{part}(rows: list[dict[str, object]]) -> list[Record] | None:",
            '    """Read every row; stop at the first field that does not fit the schema."""',
            "    if not rows:",
            "        return None",
            "    records: list[Record] = []",
            "    for index, row in enumerate(rows):",
            "        for name, kind in SCHEMA.items():",
            "            if not isinstance(row.get(name), kind):",
            '                raise ValueError(f"row {index}: {name} is not {kind}")',
            "        records.append(Record(**row))",
            "    return records",
            "```",
            "",
        ]
    return "\n".join(lines[:ANSWER_LINES]) + "\n"


async def seed_turns(db: Any, title: str, turns: int, long_every: int) -> str:
    """A session of `turns` question/answer pairs; every `long_every`-th answer (and the
    last) is a long one, the others a short answer with a small code block."""
    session = await db.create_session(
        model="demo-model", provider="demo", workspace="/w", title=title
    )
    for i in range(turns):
        await db.add_message(session["id"], {"role": "user", "content": f"question {i}?"})
        if (i + 1) % long_every == 0 or i == turns - 1:
            content = long_answer(i)
        else:
            content = f"Step {i} sets **x**:\n\n```python\nx = {i}\nprint(x)\n```\n"
        await db.add_message(session["id"], {"role": "assistant", "content": content})
    return session["id"]


async def seed_empty(db: Any) -> str:
    """A session with no rows: what every ratio is measured against."""
    session = await db.create_session(
        model="demo-model", provider="demo", workspace="/w", title="empty"
    )
    return session["id"]
