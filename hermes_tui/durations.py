"""How long something took or has been going on, as the screen says it: the one definition."""

from __future__ import annotations


def format_duration(seconds: float, *, tenths: bool = False) -> str:
    """`12 s`, `5 min`, `1 h 5 min`; with `tenths`, `0.3s`, `12.3s`, `2m05s`.

    A clock that counts while something goes on (the turn state, the stall banner, a working
    session) moves in whole seconds; a finished tool call shows its own time to the tenth,
    where a fraction of a second still says something.
    """
    if tenths:
        if seconds < 60:
            return f"{seconds:.1f}s"
        minutes, rest = divmod(int(seconds), 60)
        return f"{minutes}m{rest:02d}s"
    whole = max(0, int(seconds))
    if whole < 60:
        return f"{whole} s"
    minutes = whole // 60
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min"
