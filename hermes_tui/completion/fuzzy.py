"""Fuzzy ranking of workspace paths for the `@` picker (rapidfuzz scores, P2).

A path is a candidate when the query's characters appear in it in order (case ignored);
candidates are scored by rapidfuzz's `partial_ratio` against the file or folder name (or
the whole path once the query has a `/`), and ties go to a name that starts with the
query, then to a path that holds it whole, then to shorter paths. Each query typed on from
the last one only filters the last one's candidates, so typing narrows in time that
shrinks with the list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rapidfuzz import fuzz, process

SHOWN = 50
"""Ranked results kept per query (the picker shows the first few, and scrolls the rest)."""
SCORED = 400
"""Candidates scored in full; the rest of a long candidate list is cut by rapidfuzz first."""


def subsequence(query: str) -> re.Pattern[str]:
    """A pattern matching text that holds the query's characters in order (no backtracking)."""
    chars = [re.escape(c) for c in query]
    tail = "".join(f"[^{c}]*{c}" for c in chars[1:])
    return re.compile(chars[0] + tail)


@dataclass
class Table:
    """One index version's paths with what ranking needs of them, built once per version."""

    version: int
    paths: tuple[str, ...]
    lower: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    by_depth: list[int] = field(default_factory=list)

    @classmethod
    def of(cls, version: int, paths: tuple[str, ...]) -> Table:
        """Lower-cased paths and names, and the order an empty query shows them in."""
        lower = [p.lower() for p in paths]
        names = [p.rstrip("/").rsplit("/", 1)[-1] for p in lower]
        by_depth = sorted(range(len(paths)), key=lambda i: (lower[i].count("/"), lower[i]))
        return cls(version, paths, lower, names, by_depth)


class Ranker:
    """Ranks queries over a `Table`, narrowing from the previous query where it can."""

    def __init__(self) -> None:
        self.table = Table(0, ())
        self._last_query: str | None = None
        self._last_candidates: list[int] = []

    def use(self, version: int, paths: tuple[str, ...]) -> None:
        """Rank over another index version from now on."""
        if version != self.table.version:
            self.table = Table.of(version, paths)
            self._last_query = None

    def rank(self, query: str, limit: int = SHOWN) -> list[str]:
        """The best `limit` paths for `query`, best first."""
        table = self.table
        q = query.lower()
        if not q:
            return [table.paths[i] for i in table.by_depth[:limit]]
        candidates = self._candidates(q)
        keys = table.lower if "/" in q else table.names
        if len(candidates) > SCORED:
            scored = process.extract(
                q,
                [keys[i] for i in candidates],
                scorer=fuzz.partial_ratio,
                processor=None,
                limit=SCORED,
            )
            best = [(candidates[index], score) for _key, score, index in scored]
        else:
            best = [(i, fuzz.partial_ratio(q, keys[i])) for i in candidates]
        best.sort(key=lambda item: self._order(q, item[0], item[1]))
        return [table.paths[i] for i, _score in best[:limit]]

    def _candidates(self, q: str) -> list[int]:
        """Indices of the paths holding `q`'s characters in order (from the last query's)."""
        table = self.table
        last = self._last_query
        pool: range | list[int]
        if last is not None and q.startswith(last):
            pool = self._last_candidates
        else:
            pool = range(len(table.lower))
        search = subsequence(q).search
        lower = table.lower
        found = [i for i in pool if search(lower[i])]
        self._last_query, self._last_candidates = q, found
        return found

    def _order(self, q: str, index: int, score: float) -> tuple:
        table = self.table
        name, path = table.names[index], table.lower[index]
        return (-score, not name.startswith(q), q not in path, len(path), path)
