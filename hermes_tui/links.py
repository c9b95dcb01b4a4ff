"""Which links the app opens: only web and mail links, shown exactly as they are (SPEC H1).

A link in an answer is the model's text. Opening it hands it to the desktop's opener, which
for `file:` opens (or runs) a local file and for a custom scheme (`vscode:`, `ssh:`,
`x-foo:`) starts whatever program claims that scheme. So a click opens `http`, `https` and
`mailto` only; any other link, one with no scheme (a relative path) and one holding a
character that does not show as itself, is refused with a sentence that names it.
"""

from __future__ import annotations

import re

from hermes_tui.safe_text import safe_name

OPENABLE_SCHEMES = ("http", "https", "mailto")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
SHOWN_CHARS = 80
"""How much of a refused link the sentence quotes."""


def _quoted(url: str) -> str:
    shown = safe_name(url)
    return shown if len(shown) <= SHOWN_CHARS else shown[: SHOWN_CHARS - 1] + "…"


def refusal(url: str) -> str | None:
    """Why `url` is not opened (one sentence), or None when it may be."""
    allowed = ", ".join(OPENABLE_SCHEMES[:-1]) + f" and {OPENABLE_SCHEMES[-1]}"
    scheme = _SCHEME.match(url)
    if scheme is None:
        what = "it has no scheme"
    elif scheme.group(1).lower() not in OPENABLE_SCHEMES:
        what = f"its scheme is `{scheme.group(1).lower()}:`"
    elif safe_name(url) != url:
        what = "it holds hidden characters"
    else:
        return None
    return f"Not opened: {_quoted(url)} ({what}); only {allowed} links open."
