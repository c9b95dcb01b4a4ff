"""The one composition root: the demo model, the session store and the agent, started and
shut down the same way for the TUI and for headless mode."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agent.config import Config

if TYPE_CHECKING:
    from agent.events import Sink
    from agent.loop import Agent
    from agent.mcp.manager import McpManager
    from agent.ports import ApprovalPolicy
    from agent.scripted import ScriptedServer
    from storage.db import SessionDB


def load_config_for(*, demo: bool = False, model: str | None = None) -> Config:
    """config.yaml and the environment, with `--model provider:model` applied (checked)."""
    from agent.config import ConfigError, load_config, split_model_ref
    from hermes_tui.exit_codes import UsageError

    config = load_config(demo=demo)
    if model:
        try:
            # The shape first ("must look like provider:model"), then an unknown provider.
            config.provider(split_model_ref(model)[0])
        except ConfigError as exc:
            raise UsageError(str(exc)) from None  # the command line's fault: exit 2
        config = config.with_model(model)
    return config


@dataclass
class Runtime:
    """What a run of hermes-tui works with: its config, the store, the agent, the demo server."""

    config: Config
    db: SessionDB
    agent: Agent
    demo_server: ScriptedServer | None = None
    mcp: McpManager | None = None
    """The MCP servers, or None when none is configured."""
    on_exit_wait: Callable[[str], None] | None = None
    """Told what the exit waits for while another process's lock holds queued writes."""
    not_saved: str | None = None
    """After close: the sentence naming what could not be saved, if anything."""
    stopped_background: str | None = None
    """After close: the sentence naming the background processes it stopped (G2), if any."""

    @classmethod
    async def start(
        cls,
        config: Config,
        sink: Sink,
        approve: ApprovalPolicy | None,
        *,
        workspace: Path,
        on_exit_wait: Callable[[str], None] | None = None,
        demo_delay: float | None = None,
    ) -> Runtime:
        """Start the demo model (if configured, its chunks `demo_delay` s apart when given),
        open the store, build the agent; the MCP servers start in the background (M1)."""
        from agent.demo import start_demo
        from agent.loop import Agent
        from agent.mcp.attach import attach_mcp
        from hermes_tui.store import open_store

        config, server = start_demo(config, delay=demo_delay)
        try:
            db = await open_store(config)
        except BaseException:
            if server is not None:
                server.stop()
            raise
        agent = Agent(config, store=db, sink=sink, workspace=workspace, approve=approve)
        # The instruction files, read off the caller's loop (P1); their notices go to `sink`.
        await asyncio.to_thread(agent.refresh_instructions)
        # Off the event loop: importing the MCP SDK and reading .mcp.json take a while, and
        # the UI draws meanwhile (M1); the servers themselves start on their own loop.
        mcp = await asyncio.to_thread(attach_mcp, agent, workspace)
        return cls(config, db, agent, server, mcp, on_exit_wait)

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        config: Config,
        sink: Sink,
        approve: ApprovalPolicy | None,
        *,
        workspace: Path,
        on_exit_wait: Callable[[str], None] | None = None,
    ) -> AsyncIterator[Runtime]:
        """`async with Runtime.open(...) as runtime`: started, and closed however it ends."""
        runtime = await cls.start(
            config, sink, approve, workspace=workspace, on_exit_wait=on_exit_wait
        )
        try:
            yield runtime
        finally:
            await runtime.close()

    async def close(self, wait: float | None = None) -> str | None:
        """Stop the agent and its processes, then close the store within its bounded exit
        wait (`wait`: another bound, e.g. none after a quit that already waited) (H6, H7).

        Returns (and keeps in `not_saved`) the sentence naming what could not be saved.
        """
        from agent.background import BACKGROUND, stopped_sentence
        from agent.tools.shell import kill_all_children
        from storage.errors import StorageError, sentence

        self.agent.stop()
        self.agent.close()
        # Bounded (the exit grace): no background process outlives the run, and each is named.
        stopped = await asyncio.to_thread(BACKGROUND.stop_all)
        self.stopped_background = stopped_sentence(stopped)
        kill_all_children()  # no run_shell process group outlives the run (H6)
        if self.mcp is not None:
            await asyncio.to_thread(self.mcp.close)  # bounded; stdio servers are killed
        try:
            await self.db.close(wait=wait, on_wait=self.on_exit_wait)
        except StorageError as exc:
            self.not_saved = sentence(exc)
        finally:
            if self.demo_server is not None:
                self.demo_server.stop()
        return self.not_saved
