"""run_shell's environment: key variables are withheld (SPEC H5)."""

from __future__ import annotations

from agent.secrets import STANDARD_KEY_ENV
from agent.tools import ToolContext


def test_standard_key_variables_are_withheld_by_default(reg, ws, monkeypatch):
    for name in STANDARD_KEY_ENV:
        monkeypatch.setenv(name, f"value-of-{name}")
    monkeypatch.setenv("UNRELATED_SETTING", "kept")
    result = reg.run("run_shell", {"command": "env"}, ToolContext(ws, approval_mode="yolo"))
    assert "UNRELATED_SETTING=kept" in result.output
    assert not [name for name in STANDARD_KEY_ENV if f"{name}=" in result.output]


def test_the_agent_names_what_to_withhold(reg, ws, monkeypatch):
    monkeypatch.setenv("MY_PROVIDER_KEY", "secret-value")
    monkeypatch.setenv("OPENAI_API_KEY", "passed-through")
    ctx = ToolContext(ws, approval_mode="yolo", hidden_env=frozenset({"MY_PROVIDER_KEY"}))
    output = reg.run("run_shell", {"command": "env"}, ctx).output
    assert "MY_PROVIDER_KEY=" not in output and "OPENAI_API_KEY=passed-through" in output
    assert "PAGER=cat" in output
