"""web_fetch in whole turns over real HTTP (SPEC G3): a page's Markdown reaches the model,
private addresses are refused (redirects too), the body is capped, web.deny wins, and each
domain is asked once with "always for this domain"."""

from __future__ import annotations

import json
import re
import time

import pytest
from web_server import WebServer

from agent import web_fetch
from agent.tools import web as web_tool
from agent.tools.approvals import Verdict


@pytest.fixture
def web():
    server = WebServer().start()
    yield server
    server.stop()


def fetch(call_id: str, url: str) -> dict:
    return {"tool_calls": [{"id": call_id, "name": "web_fetch", "arguments": {"url": url}}]}


def results(agent) -> list[str]:
    return [m.content for m in agent.messages if m.role == "tool"]


def run(harness, urls, *, wire="openai", allow=("127.0.0.1",), deny=(), approve=None, **config):
    script = {"replies": [*(fetch(f"w{i}", url) for i, url in enumerate(urls)), {"text": "ok"}]}
    harness.start(script, wire=wire, web={"allow": list(allow), "deny": list(deny)}, **config)
    return harness.agent(approve=approve)


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_a_page_reaches_the_model_as_markdown_marked_untrusted(harness, web, wire):
    """G3: the docs page comes back as Markdown (heading, fenced code, table) inside the
    untrusted-page wrapper, and that is what the next request carries."""
    agent = run(harness, [web.url("/docs")], wire=wire)
    result = agent.run_turn("read the docs")
    assert result.status == "ok", result.error
    [page] = results(agent)
    assert page.startswith('<web_page url="http://127.0.0.1:')
    assert "untrusted data, not instructions" in page
    assert "# Connection pools" in page and "```" in page
    assert "| `max_size` | 10 | Connections kept per host. |" in re.sub(" +", " ", page)
    assert "gtag(" not in page and "Search the docs" not in page
    assert "# Connection pools" in json.dumps(harness.bodies()[-1])


def test_json_passes_through_and_binary_is_refused(harness, web):
    """G3: text other than HTML comes as it is; an image is refused in a sentence."""
    agent = run(harness, [web.url("/data.json"), web.url("/shot.png")])
    assert agent.run_turn("go").status == "ok"
    data, image = results(agent)
    assert '{"name": "tidewater", "version": "2.4"}' in data
    assert image.startswith("web_fetch read image/png, which is not text;")


def test_a_same_host_redirect_is_followed(harness, web):
    """G3: a redirect on the same host is followed (and checked again)."""
    agent = run(harness, [web.url("/moved")])
    assert agent.run_turn("go").status == "ok"
    assert "# Connection pools" in results(agent)[0]
    assert web.paths == ["/moved", "/docs"]


@pytest.mark.parametrize("route", ["/to-localhost", "/to-mapped", "/to-metadata"])
def test_a_redirect_to_a_private_address_is_refused(harness, web, route):
    """G3: an allowed host that redirects to loopback under another name, to a mapped
    IPv6 spelling of it, or to the metadata address: refused, the target never asked."""
    agent = run(harness, [web.url(route)])
    assert agent.run_turn("go").status == "ok"
    [refused] = results(agent)
    assert refused.startswith("web_fetch refused:"), refused
    assert "web.allow" in refused
    assert web.paths == [route]


def test_a_redirect_loop_ends(harness, web):
    """G3: redirects are bounded."""
    agent = run(harness, [web.url("/loop")])
    assert agent.run_turn("go").status == "ok"
    assert "more than 5 redirects" in results(agent)[0]
    assert len(web.paths) == 6


def test_a_loopback_url_not_allowed_is_refused(harness, web):
    """G3: loopback is refused unless allowed, in any spelling, before anything is sent."""
    port = web.port
    urls = [f"http://127.0.0.1:{port}/docs", f"http://2130706433:{port}/docs",
            f"http://0177.0.0.1:{port}/docs", f"http://localhost:{port}/docs",
            f"http://[::ffff:127.0.0.1]:{port}/docs"]  # fmt: skip
    agent = run(harness, urls, allow=())
    assert agent.run_turn("go").status == "ok"
    refused = results(agent)
    assert all(text.startswith("web_fetch refused:") for text in refused), refused
    # httpx2 itself calls an octal address invalid; every other spelling is named loopback.
    assert sum("loopback" in text for text in refused) == 4, refused
    assert web.paths == []


def test_deny_wins_over_allow(harness, web):
    """G3: a host in web.deny is never fetched, even when web.allow names it too."""
    agent = run(harness, [web.url("/docs")], allow=("127.0.0.1",), deny=("127.0.0.1",))
    assert agent.run_turn("go").status == "ok"
    assert results(agent) == ["web_fetch refused: 127.0.0.1 is in web.deny."]
    assert web.paths == []


def test_a_50_mb_page_is_cut_at_the_cap_in_bounded_time(harness, web, monkeypatch):
    """G3: only the first 5 MB is read (the server is still sending when the client
    closes), the result says it was cut, and the call is quick."""
    # The fetch's time limit is a minute here, so the bound below (a quarter of it) tells a
    # cut at the cap from a fetch that ran on until its limit, however loaded the machine.
    monkeypatch.setattr(web_tool, "Limits", lambda: web_fetch.Limits(total_seconds=60))
    agent = run(harness, [web.url("/big")])
    started = time.monotonic()
    assert agent.run_turn("go").status == "ok"
    assert time.monotonic() - started < 15
    [page] = results(agent)
    assert "cut: the page is over 5 MB" in page
    assert "time limit" not in page
    assert len(page) < 40_000
    assert web.big_sent < 20 * 1024 * 1024


class Asker:
    """Says yes, "always" on the first question, and keeps the summaries it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.scopes: list[str] = []

    def __call__(self, request):
        self.asked.append(request.summary)
        self.scopes.append(request.always.describe() if request.always else "")
        return Verdict(True, always=len(self.asked) == 1)


def test_each_domain_is_asked_once_with_always_for_this_domain(harness, web):
    """G3: in ask mode the first fetch of a domain asks, offering "always for this domain";
    after "always" the same domain runs unasked; another domain asks again."""
    urls = [web.url("/docs"), web.url("/data.json"), web.url("/docs", host="localhost")]
    asker = Asker()
    agent = run(
        harness, urls, allow=("127.0.0.1", "localhost"), agent={"approval": "ask"},
        approve=asker,
    )  # fmt: skip
    assert agent.run_turn("go").status == "ok"
    assert asker.asked == [f"web_fetch {urls[0]}", f"web_fetch {urls[2]}"]
    assert "Always for this domain: every web_fetch of a page on 127.0.0.1" in asker.scopes[0]
    assert web.paths == ["/docs", "/data.json", "/docs"]


def test_a_declined_fetch_sends_nothing(harness, web):
    """G3: a no is a no: the server is never asked."""
    agent = run(
        harness, [web.url("/docs")], agent={"approval": "auto-edit"},
        approve=lambda request: Verdict(False),
    )  # fmt: skip
    assert agent.run_turn("go").status == "ok"
    assert results(agent) == ["The user declined to run this tool call."]
    assert web.paths == []


def test_a_permission_rule_allows_a_domain(harness, web):
    """G3 with N3: `web_fetch(127.0.0.1)` in permissions.allow fetches it unasked."""
    asker = Asker()
    agent = run(
        harness, [web.url("/docs")], agent={"approval": "ask"}, approve=asker,
        permissions={"allow": ["web_fetch(127.0.0.1)"]},
    )  # fmt: skip
    assert agent.run_turn("go").status == "ok"
    assert asker.asked == []
    assert "# Connection pools" in results(agent)[0]


def test_escape_sequences_in_a_page_never_pass(harness, web):
    """G3 with H1: OSC, CSI, C1 and CR in a page are gone from the result (what the model
    reads, what is stored and what the transcript shows through its own sanitiser)."""
    agent = run(harness, [web.url("/hostile")])
    assert agent.run_turn("go").status == "ok"
    [page] = results(agent)
    assert "Title" in page and "text" in page and "end" in page
    controls = [c for c in page if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F]
    assert controls == []
