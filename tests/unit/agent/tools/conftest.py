"""Fixtures for the tool tests: a real workspace in tmp_path and a default registry."""

from __future__ import annotations

import pytest

from agent.tools import ToolContext, default_registry


@pytest.fixture
def ws(tmp_path):
    """A fresh workspace directory (resolved) next to an `outside` directory."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("top secret\n")
    return workspace.resolve()


@pytest.fixture
def reg():
    """The default tool registry."""
    return default_registry()


@pytest.fixture
def yolo(ws):
    """A context that never asks for approval."""
    return ToolContext(ws, approval_mode="yolo")
