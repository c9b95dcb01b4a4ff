"""Fuzzy ranking of workspace paths for the `@` picker (rapidfuzz scores, P2).

A path is a candidate when the query's characters appear in it in order (case ignored);
candidates are scored by rapidfuzz's `partial_ratio` against the file or folder name (or
the whole path once the query has a `/`), and ties go to a name that starts with the
query, then to a path that holds it whole, then to shorter paths. Of a long candidate list
only the likeliest few hundred are scored (the query whole in the name, then in the path).
Each query typed on from the last one only filters the last one's candidates, so typing
narrows in time that shrinks with the list.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from rapidfuzz import fuzz

SHOWN = 50
"""Ranked results kept per query (the picker shows the first few, and scrolls the rest)."""
SCORED = 400
"""Candidates scored by rapidfuzz; a longer candidate list keeps its likeliest this many."""
CHUNK = 2_000
"""Paths looked at between two pauses (well under a millisecond of work)."""


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
        by_depth = sorted(
            range(len(paths)), key=lambda i: (lower[i].rstrip("/").count("/"), lower[i])
        )
        return cls(version, paths, lower, names, by_depth)


class Stale(Exception):
    """A newer query came while ranking: this one is dropped half way."""


Pause = Callable[[], None]
"""Called between chunks of work: yields the interpreter to the UI thread (and may raise
Stale)."""


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

    def rank(self, query: str, limit: int = SHOWN, pause: Pause | None = None) -> list[str]:
        """The best `limit` paths for `query`, best first.

        The work runs in chunks with `pause()` between them, so a thread ranking a big tree
        hands the interpreter back often and the UI thread never waits long for it.
        """
        pause = pause or (lambda: None)
        table = self.table
        q = query.lower()
        if not q:
            return [table.paths[i] for i in table.by_depth[:limit]]
        candidates = self._candidates(q, pause)
        if len(candidates) > SCORED:
            candidates = self._likeliest(q, candidates, pause)
        keys = table.lower if "/" in q else table.names
        best = [(i, fuzz.partial_ratio(q, keys[i], processor=None)) for i in candidates]
        best.sort(key=lambda item: self._order(q, item[0], item[1]))
        return [table.paths[i] for i, _score in best[:limit]]

    def _candidates(self, q: str, pause: Pause) -> list[int]:
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
        found: list[int] = []
        for start in range(0, len(pool), CHUNK):
            found.extend(i for i in pool[start : start + CHUNK] if search(lower[i]))
            pause()
        self._last_query, self._last_candidates = q, found
        return found

    def _likeliest(self, q: str, candidates: list[int], pause: Pause) -> list[int]:
        """The SCORED candidates most likely to rank first: the query whole in the name,
        then whole in the path, then the rest (in index order)."""
        table = self.table
        names, lower = table.names, table.lower
        in_name: list[int] = []
        in_path: list[int] = []
        for start in range(0, len(candidates), CHUNK):
            for i in candidates[start : start + CHUNK]:
                if q in names[i]:
                    in_name.append(i)
                elif q in lower[i]:
                    in_path.append(i)
            if len(in_name) >= SCORED:
                break
            pause()
        picked = dict.fromkeys([*in_name, *in_path][:SCORED])
        for i in candidates:
            if len(picked) >= SCORED:
                break
            picked.setdefault(i)
        return list(picked)

    def _order(self, q: str, index: int, score: float) -> tuple[float, bool, bool, int, str]:
        table = self.table
        name, path = table.names[index], table.lower[index]
        return (-score, not name.startswith(q), q not in path, len(path), path)
