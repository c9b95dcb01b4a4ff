"""Ranking the picker's query on a thread of its own: typing never waits for it (P2).

`request(query)` only stores the query and wakes the thread; a query typed while one is
ranked replaces the one waiting, so the thread always ranks the newest and no backlog forms.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from hermes_tui.completion.fuzzy import Ranker, Stale
from hermes_tui.completion.index import FileIndex

Deliver = Callable[[str, list[str], int], None]
"""Called on the search thread with (query, ranked paths, index version)."""


class PathSearch:
    """The newest query, ranked over the index on a daemon thread, results delivered."""

    def __init__(self, index: FileIndex, deliver: Deliver) -> None:
        self.index = index
        self.deliver = deliver
        self.ranker = Ranker()
        self._cond = threading.Condition()
        self._pending: str | None = None
        self._closed = False
        self._thread: threading.Thread | None = None

    def request(self, query: str) -> None:
        """Rank `query` soon (the newest request wins); returns at once."""
        with self._cond:
            if self._closed:
                return
            self._pending = query
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="picker", daemon=True)
                self._thread.start()
            self._cond.notify()

    def close(self) -> None:
        """Stop the thread (the app is going)."""
        with self._cond:
            self._closed = True
            self._cond.notify()
        if self._thread is not None:
            self._thread.join(2.0)

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._pending is None and not self._closed:
                    self._cond.wait()
                if self._closed or self._pending is None:  # None only once closed
                    return
                query, self._pending = self._pending, None
            index = self.index
            version = index.version
            self.ranker.use(version, index.paths)
            try:
                ranked = self.ranker.rank(query, pause=self._pause)
            except Stale:
                continue  # a newer query waits: rank that one instead
            self.deliver(query, ranked, version)

    def _pause(self) -> None:
        """Between chunks: let the UI thread run, and drop this query if a newer one came."""
        time.sleep(0)
        if self._pending is not None or self._closed:
            raise Stale
