"""`/model` with no argument: what each configured provider serves, asked on a worker thread;
a dead server says so in one sentence; Tab then completes `provider:` from those lists."""

from __future__ import annotations

import socket
import threading

import yaml
from ui.tui_helpers import type_keys
from waits import wait_until

from agent.config import load_config
from agent.providers.discovery import list_provider_models
from hermes_tui.app import HermesApp
from hermes_tui.widgets.messages import NoticeLine

SIZE = (120, 36)


def _app_with_a_dead_provider(make_app, server, hermes_home, dead_url: str) -> HermesApp:
    """The scripted providers plus `dead`, whose server never answers."""
    probe = make_app(server)  # writes the config for the scripted server
    path = hermes_home / "config.yaml"
    data = yaml.safe_load(path.read_text())
    data["providers"]["dead"] = {"kind": "openai", "base_url": dead_url, "api_key": "test"}
    path.write_text(yaml.safe_dump(data))
    return HermesApp(load_config(), workspace=probe.workspace, probes=probe.probes)


def _notices(app) -> list[str]:
    return [notice.text for notice in app.transcript.query(NoticeLine)]


async def test_model_lists_what_each_provider_serves_off_the_ui_thread(
    make_app, scripted_in_process, hermes_home
):
    server = scripted_in_process({"replies": [], "server": {"models": ["test-model", "coder-7b"]}})
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        dead_url = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
    app = _app_with_a_dead_provider(make_app, server, hermes_home, dead_url)
    gate = threading.Event()
    asked_on: list[str] = []

    def gated(providers):
        asked_on.append(threading.current_thread().name)
        gate.wait(10)  # the servers are slow: the UI must not wait with them
        return list_provider_models(providers, timeout=0.5)

    app.completion.models.list_every = gated
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await app.submit("/model")
        await wait_until(pilot, lambda: asked_on, what="the listing to be asked")
        assert "Asking the providers for their models" in _notices(app)[-1]
        await type_keys(pilot, *"still typing")  # keys go on while the servers are asked
        assert app.composer.text == "still typing"
        assert asked_on != [threading.current_thread().name]
        gate.set()
        await wait_until(
            pilot,
            lambda: "What each provider serves" in _notices(app)[-1],
            what=lambda: f"the listing (notices: {_notices(app)})",
        )
        lines = _notices(app)[-1].splitlines()
        assert lines[0] == "Model: scripted:test-model. What each provider serves:"
        assert "  scripted: test-model (in use), coder-7b" in lines
        assert "  other: test-model, coder-7b" in lines
        assert f"  dead: the server at {dead_url} did not answer; is it running?" in lines
        app.composer.load_text("")
        await type_keys(pilot, *"/model other:c", "tab")
        assert app.composer.text == "/model other:coder-7b "


async def test_the_demo_server_is_asked_where_it_listens(make_app):
    app = make_app()  # the demo model: its server's port is known once it started
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await app.submit("/model")
        await wait_until(
            pilot,
            lambda: "What each provider serves" in _notices(app)[-1],
            what=lambda: f"the listing (notices: {_notices(app)})",
        )
        [line] = [ln for ln in _notices(app)[-1].splitlines() if ln.startswith("  demo:")]
        assert "did not answer" not in line, line
