"""Fixtures for the storage tests: a fresh SessionDB on a real file per test."""

from __future__ import annotations

import pytest

from storage import SessionDB


@pytest.fixture
async def db(tmp_path):
    """An open SessionDB in tmp_path, closed after the test."""
    store = await SessionDB.open(tmp_path / "state.db")
    yield store
    await store.close()


@pytest.fixture
async def session(db):
    """One session in db."""
    return await db.create_session(model="gpt-test", provider="openai", workspace="/ws")
