"""UI test fixtures: scripted model server, app factory, and snapshots in top-level snapshots/."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pytest_textual_snapshot import SVGImageExtension
from ui.tui_helpers import FIXED_NOW, TEST_ARM_SECONDS, write_config

from agent.config import load_config
from agent.scripted import Script, ScriptedServer
from hermes_tui.app import HermesApp
from hermes_tui.probes import Probes

SNAPSHOT_ROOT = Path(__file__).resolve().parents[2] / "snapshots"


def _snapshot_dirname(cls: type, *, test_location: Any) -> str:
    # One folder per test module under the top-level snapshots/ (DESIGN.md).
    return str(SNAPSHOT_ROOT / test_location.basename)


SVGImageExtension.dirname = classmethod(_snapshot_dirname)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A small, fixed workspace the agent's tools see."""
    root = tmp_path / "workspace"
    root.mkdir()
    (root / "README.md").write_text("# sample project\n", encoding="utf-8")
    (root / "app.py").write_text("print('hello')\n", encoding="utf-8")
    (root / "src").mkdir()
    return root


@pytest.fixture
def scripted(servers: Any) -> Any:
    """A started scripted model server: `server = scripted({"replies": [...]})` (the
    worker's server, loaded with this script; a second call in a test starts its own)."""

    def start(script: dict[str, Any]) -> ScriptedServer:
        return servers.start(Script.from_dict(script))

    return start


@pytest.fixture
def scripted_in_process(in_process_servers: Any) -> Any:
    """`scripted` without a socket: the same script played in this process, through the real
    SDKs and httpx2. For tests that are not about the wire (retries, stalls, drops, hostile
    servers and TLS keep `scripted`)."""

    def start(script: dict[str, Any]) -> ScriptedServer:
        return in_process_servers.start(Script.from_dict(script))

    return start


@pytest.fixture
def make_app(hermes_home: Path, workspace: Path, tmp_path: Path, monkeypatch: Any) -> Any:
    """Build a HermesApp on the scripted server (or the demo model with `server=None`).

    Deterministic: fixed wall clock and elapsed clock, tool durations shown as 0.0s (the
    agent times tools on the real clock), no cursor blink, HOME=tmp_path so the demo hint
    reads `~/hermes-home/config.yaml` on every machine. Approval dialogs arm
    after `arm_seconds` of the real clock, or of `approval_clock` (a FakeClock that only
    moves when the test says so). Start-up skips its full garbage collection unless
    `collect_before_freeze` (in a test process it costs about a second and collects nothing
    the app keeps), and the demo model streams at once unless `demo_delay` is given (None:
    the tour's own pace, about 5 s a turn).
    """
    monkeypatch.setenv("HOME", str(tmp_path))

    def build(
        server: ScriptedServer | None = None,
        *,
        approval_clock: Callable[[], float] | None = None,
        arm_seconds: float | None = TEST_ARM_SECONDS,
        collect_before_freeze: bool = False,
        demo_delay: float | None = 0.0,
        **agent: Any,
    ) -> HermesApp:
        settings = {"retry_base_seconds": 0.01, "system_prompt": "You are a test agent."}
        settings.update(agent)
        if server is not None:
            write_config(hermes_home, server.openai_base_url, **settings)
        else:
            import yaml

            config = {"agent": settings, "sandbox": "off"}
            (hermes_home / "config.yaml").write_text(yaml.safe_dump(config))
        probes = Probes(
            now=lambda: FIXED_NOW,
            clock=lambda: 0.0,
            cursor_blink=False,
            collect_before_freeze=collect_before_freeze,
            demo_delay=demo_delay,
            approval_arm_seconds=arm_seconds,
            tool_duration=lambda _seconds: 0.0,
        )
        if approval_clock is not None:
            probes.approval_clock = approval_clock
        return HermesApp(load_config(), workspace=workspace, probes=probes)

    return build


AppFactory = Callable[..., HermesApp]
