"""The cyclic garbage collector waits while the TUI starts (Z2, `bench startup`).

Start-up builds tens of thousands of objects (modules, classes, styles, widgets) and nearly all
of them live as long as the app, so each collection before the app is up scans them for
nothing: about 120 collections ran before the first frame, a tenth of the start-up time.
The command line pauses the collector before the app's imports; once the app is up it runs
one full collection, freezes what is left (HermesApp._start) and resumes the collector here.
An app that ends before it came up (an error at start, the first-frame bench) freezes
start-up's objects as they are: the process ends with them, and the first collection after
the pause would otherwise scan every one of them on the way out (a tenth of a second).
"""

from __future__ import annotations

import gc


class _Pause:
    """Whether this module paused the collector (it resumes only a pause of its own)."""

    held = False


def hold() -> None:
    """Pause the collector until `release()`, unless something else already paused it."""
    if gc.isenabled():
        gc.disable()
        _Pause.held = True


def release() -> None:
    """Resume the collector if `hold()` paused it; once, however often it is called."""
    if _Pause.held:
        _Pause.held = False
        gc.enable()


def release_unused() -> None:
    """Resume the collector for an app that ends before it came up (no-op once it did)."""
    if _Pause.held:
        gc.freeze()  # nothing built so far is worth a scan: the process ends with it
        release()
