"""HTML to Markdown for `web_fetch` (SPEC G3): converters on the same pages, side by side.

`app` is what web_fetch ships (agent/web_pages.py: html-to-markdown with the page
furniture left out by selector); the others are the libraries with their own defaults. Each
saved page in tests/fixtures/web/ names what a reader must get from it (`keep`: the
article's words, a fenced code line, a table row) and what is page furniture (`drop`: menus,
ads, cookie banners, footers, script text). Quality is the share of `keep` found plus the
share of `drop` left out; speed is the median of a few conversions. The big page is the
docs page's article repeated to about 2 MB, built here rather than stored. trafilatura
(with lxml_html_clean) and markdownify are not dependencies: a converter that is not
installed is skipped.
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable
from pathlib import Path

from bench._common import figure, median

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "web"

CHECKS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "docs": (
        (
            "# Connection pools",
            "## Creating a pool",
            "pool = Pool(max_size=20, idle_timeout=30.0)",
            "```",
            "tidewater get --pool-size 20",
            "| `max_size` | 10 | Connections kept per host. |",
            "| `idle_timeout` | 60.0 |",
            "Call `pool.close()`",
            "deadlocks: close it from the main thread",
            "10 connections per host",
        ),
        ("gtag(", "Search the docs", "Built with Sphinx", "Privacy policy", "Sponsors"),
    ),
    "article": (
        (
            "City council approves harbour tunnel",
            "voted 9 to 4 on Thursday night",
            "1.8 billion dollars",
            "This is the decision our children will thank us for",
            "What happens next",
            "Boring of the two tubes",
            "25 per cent contingency",
            "regional court to review",
        ),
        (
            "We use cookies",
            "Subscribe from $1",
            "Save 40% on solar",
            "Refinance your mortgage",
            "Hot deals on flights",
            "All rights reserved",
            "_paq.push",
            "Get the morning briefing",
        ),
    ),
}


def _html_to_markdown(html: str) -> str:
    from html_to_markdown import ConversionOptions, PreprocessingOptions, convert

    options = ConversionOptions(
        extract_metadata=False,
        preprocessing=PreprocessingOptions(enabled=True, preset="standard"),
    )
    return convert(html, options).content or ""


def _trafilatura(html: str) -> str:
    import trafilatura

    return (
        trafilatura.extract(
            html, output_format="markdown", include_tables=True, include_formatting=True
        )
        or ""
    )


def _markdownify(html: str) -> str:
    from markdownify import markdownify

    return markdownify(html, heading_style="ATX", strip=["script", "style"])


def _app(html: str) -> str:
    from agent.web_pages import html_to_markdown

    return html_to_markdown(html)


CONVERTERS: dict[str, Callable[[str], str]] = {
    "app": _app,
    "html_to_markdown": _html_to_markdown,
    "trafilatura": _trafilatura,
    "markdownify": _markdownify,
}


def big_page(target_bytes: int = 2_000_000) -> str:
    """The docs page with its article repeated until the page is about `target_bytes`."""
    html = (FIXTURES / "docs.html").read_text()
    start, end = html.index("<article"), html.index("</article>") + len("</article>")
    body = html[start:end]
    copies = max(1, target_bytes // len(body))
    return html[:start] + body * copies + html[end:]


def _normalised(text: str) -> str:
    return re.sub(r"[ \t]+", " ", text.replace("\\_", "_"))


def quality(markdown: str, keep: tuple[str, ...], drop: tuple[str, ...]) -> float:
    """The share of `keep` found plus the share of `drop` absent, over both (0 to 1)."""
    text = _normalised(markdown)
    found = sum(_normalised(item) in text for item in keep)
    absent = sum(_normalised(item) not in text for item in drop)
    return (found + absent) / (len(keep) + len(drop))


def timed(convert: Callable[[str], str], html: str, runs: int) -> float:
    """Median milliseconds of `runs` conversions of `html`."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        convert(html)
        times.append((time.perf_counter() - started) * 1000)
    return median(times)


def main(argv: list[str]) -> int:
    """Print quality (0 to 1) and median ms per converter and page; the big page's ms."""
    parser = argparse.ArgumentParser(prog="python3 -m bench web")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--show", choices=sorted(CONVERTERS), help="print a converter's pages")
    args = parser.parse_args(argv)
    pages = {name: (FIXTURES / f"{name}.html").read_text() for name in CHECKS}
    big = big_page()
    for name, convert in CONVERTERS.items():
        try:
            convert("<p>x</p>")
        except ImportError:
            print(f"web.{name}: not installed, skipped")
            continue
        for page, html in pages.items():
            markdown = convert(html)
            if args.show == name:
                print(f"----- {name} {page} -----\n{markdown}\n")
            keep, drop = CHECKS[page]
            figure(f"web.{name}.{page}.quality", quality(markdown, keep, drop))
            figure(f"web.{name}.{page}.ms", timed(convert, html, args.runs))
        big_ms = timed(convert, big, max(1, args.runs // 2))
        figure(f"web.{name}.big_{len(big) // 1000}kB.ms", big_ms)
    return 0
