"""A fetched page as text for the model: HTML to Markdown, text as it is, binary refused (G3).

HTML goes through html-to-markdown (Rust, fast on a 5 MB page) with its standard clean-up
and the usual page furniture left out by selector: menus, footers, cookie banners, ads,
share and comment boxes. bench/web.py measured it against trafilatura and markdownify on
the pages in tests/fixtures/web/ (figures in docs/benchmarks.md). Control characters are
dropped from what the model reads (a page has no use for them; the screen's own
sanitiser, H1, stays the guard for what is shown).
"""

from __future__ import annotations

import re

from agent.text_cuts import cut_at_line_end

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
TEXT_TYPES = frozenset(
    {
        "application/json", "application/ld+json", "application/xml", "application/javascript",
        "application/x-javascript", "application/yaml", "application/x-yaml", "application/toml",
        "application/rss+xml", "application/atom+xml", "application/x-ndjson",
    }
)  # fmt: skip
FURNITURE = [
    "nav", "footer", "aside", "form", "[role=navigation]", "[role=contentinfo]",
    "[role=complementary]", "[aria-hidden=true]", ".ad", ".ads", ".advert", ".advertisement",
    "[class^=ad-]", "[id^=ad-]", "[class*=cookie]", "[id*=cookie]", "[class*=consent]",
    ".newsletter", ".share", ".social", ".comments", ".related", ".breadcrumbs",
]  # fmt: skip
"""Selectors of what a page shows around its content, left out of the Markdown."""
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class NotText(Exception):
    """The page is not text; the message is one sentence for the model."""


def media_type(content_type: str) -> str:
    """`text/html; charset=utf-8` -> `text/html`."""
    return content_type.split(";", 1)[0].strip().lower()


def charset(content_type: str) -> str | None:
    """The charset a Content-Type names, or None."""
    match = re.search(r"charset\s*=\s*\"?([\w.:-]+)", content_type, re.IGNORECASE)
    return match.group(1) if match else None


def _decoded(body: bytes, content_type: str) -> str:
    name = charset(content_type) or "utf-8"
    try:
        return body.decode(name, "replace")
    except LookupError:
        return body.decode("utf-8", "replace")


def _looks_binary(body: bytes) -> bool:
    """NUL bytes, or mostly undecodable, in the first few kilobytes: not text."""
    head = body[:4096]
    if b"\x00" in head:
        return True
    return head.decode("utf-8", "replace").count("\ufffd") > len(head) // 10


def kind_of(content_type: str, body: bytes) -> str:
    """ "html", "text" or "binary": what the body is, by its type and, without one, its bytes."""
    kind = media_type(content_type)
    if kind in HTML_TYPES:
        return "html"
    if kind.startswith("text/") or kind in TEXT_TYPES or kind.endswith(("+json", "+xml")):
        return "text"
    if kind and kind != "application/octet-stream":
        return "binary"
    if _looks_binary(body):
        return "binary"
    start = body[:1024].lstrip().lower()
    return "html" if start.startswith((b"<!doctype html", b"<html")) else "text"


def html_to_markdown(html: str) -> str:
    """HTML as Markdown, the page's furniture left out."""
    from html_to_markdown import ConversionOptions, PreprocessingOptions, convert

    options = ConversionOptions(
        extract_metadata=False,
        preprocessing=PreprocessingOptions(enabled=True, preset="standard"),
        exclude_selectors=FURNITURE,
    )
    return convert(html, options).content or ""


def page_text(content_type: str, body: bytes) -> str:
    """The body as text the model reads: Markdown for HTML, text as it came; NotText else."""
    kind = kind_of(content_type, body)
    if kind == "binary":
        shown = media_type(content_type) or "binary data"
        raise NotText(
            f"web_fetch read {shown}, which is not text; only HTML and text pages are read."
        )
    text = _decoded(body, content_type)
    if kind == "html":
        text = html_to_markdown(text)
    return _CONTROLS.sub("", text.replace("\r\n", "\n")).strip("\n")


def capped(text: str, cap: int) -> tuple[str, bool]:
    """`text` within `cap` characters, cut at a line end, and whether it was cut."""
    kept = cut_at_line_end(text, cap)
    return kept, len(kept) < len(text)
