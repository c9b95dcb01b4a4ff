"""The status panel's presenter: the turn state, tokens and cost, the liveness tick and the
stall watchdog (U1, L1-L3)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from textual.css.query import NoMatches
from textual.timer import Timer

from agent import events as ev
from agent.config import DEMO_PROVIDER
from agent.kinds import CallPurpose
from hermes_tui.doors import agent_of
from hermes_tui.durations import format_duration

if TYPE_CHECKING:
    from agent.config import Config
    from agent.loop import Agent
    from hermes_tui.approval import ApprovalFlow
    from hermes_tui.keys import KeyMap
    from hermes_tui.probes import Probes
    from hermes_tui.turns import TurnController
    from hermes_tui.widgets.sessions_panel import SessionsPanel
    from hermes_tui.widgets.stall_banner import StallBanner
    from hermes_tui.widgets.status_line import StatusLine
    from hermes_tui.widgets.status_panel import StatusPanel
    from hermes_tui.widgets.working_line import WorkingLine
    from storage.db import SessionDB

log = logging.getLogger("hermes_tui.liveness")

SILENCE_AFTER = 3.0
"""A stream quiet for this long shows as `stream silent for N s` in the turn state."""
STATUS_STREAM_SECONDS = 0.1
"""While only text streams, the status panel's token estimate is redrawn at most this often."""
COMPACTING = "compacting... ({tokens} tokens of summary)"


class StallWatchdog:
    """Warns once per episode when a busy turn is silent while the user's input waits (L2).

    It never kills the turn. `check()` is called periodically (once a second) and returns
    "warn" when the banner should appear, "clear" when it should go, else None.
    """

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.warned = False

    def check(self, *, busy: bool, waiting: int, idle_for: float) -> str | None:
        """Decide whether the stall banner appears, clears, or stays as it is."""
        stalled = busy and waiting > 0 and idle_for >= self.timeout
        if stalled and not self.warned:
            self.warned = True
            log.warning(
                "turn stalled: no activity for %.0f s while %d input(s) wait", idle_for, waiting
            )
            return "warn"
        if self.warned and not stalled:
            self.warned = False
            return "clear"
        return None

    def message(self, idle_for: float) -> str:
        """The banner's text."""
        return (
            f"No activity for {format_duration(idle_for)} while your message waits: /stop or /new"
        )


@dataclass
class TurnState:
    """What the turn is doing, derived from the agent's events (L3)."""

    phase: str = "idle"
    tool: str | None = None
    since: float = 0.0
    turn_started: float = 0.0
    last_chunk: float = 0.0
    streamed_chars: int = 0
    retry: str | None = None
    waiting_for: str = ""
    """The MCP servers a turn waits for while they start."""

    def apply(self, event: ev.AgentEvent, now: float) -> None:
        """Move the state along for one event."""
        step = _STEPS.get(type(event))
        if step is not None:
            step(self, event, now)

    def begin(self, now: float) -> None:
        """A turn (or a compaction) starts at `now`: waiting for the first token."""
        self.phase, self.turn_started, self.since = "waiting", now, now
        self.last_chunk, self.streamed_chars, self.tool = now, 0, None

    def _started(self, _event: ev.TurnStarted, now: float) -> None:
        self.begin(now)

    def _waiting(self, _event: Any, now: float) -> None:
        self._enter("waiting", now)
        self.last_chunk = now

    def _thinking(self, event: ev.ReasoningDelta, now: float) -> None:
        self._chunk("thinking", now, len(event.text))

    def _writing(self, event: ev.TextDelta | ev.ToolCallDelta, now: float) -> None:
        self._chunk("writing", now, len(getattr(event, "text", "")))

    def _tool(self, event: ev.ToolStarted, now: float) -> None:
        self._enter("tool", now)
        self.tool = event.name

    def _answered(self, _event: Any, now: float) -> None:
        self.since = now  # the tool's own time starts after the user's answer

    def _retrying(self, event: ev.Retrying, now: float) -> None:
        self._enter("retrying", now)
        self.retry = f"retrying ({event.progress}) in {event.delay:.0f} s"

    def _mcp_waiting(self, event: ev.McpWaiting, now: float) -> None:
        self._enter("mcp" if event.names else "waiting", now)
        self.waiting_for = ", ".join(event.names)

    def _compacting(self, _event: Any, now: float) -> None:
        self._enter("compacting", now)

    def _summary_grew(self, _event: Any, now: float) -> None:
        self.last_chunk = now

    def _compacted(self, _event: Any, now: float) -> None:
        self._enter("waiting", now)

    def _finished(self, _event: Any, now: float) -> None:
        self._enter("idle", now)

    def _enter(self, phase: str, now: float) -> None:
        if phase != self.phase:
            self.phase, self.since = phase, now
        if phase != "tool":
            self.tool = None

    def _chunk(self, phase: str, now: float, chars: int) -> None:
        self._enter(phase, now)
        self.last_chunk = now
        self.streamed_chars += chars

    def describe(self, now: float, store_wait: float | None = None) -> str:
        """One line for the status panel: the phase, how long, and silence when it matters;
        `store_wait`: how long a write has waited for the session database's lock (L3)."""
        if self.phase == "idle":
            return "idle"
        if self.phase == "tool":
            return f"running tool {self.tool} ({format_duration(now - self.since)})"
        if self.phase == "retrying":
            return self.retry or "retrying"
        if self.phase == "compacting":
            return f"compacting ({format_duration(now - self.since)})"
        if self.phase == "mcp":
            waited = format_duration(now - self.since)
            return f"waiting for MCP servers to start: {self.waiting_for} ({waited})"
        if store_wait is not None:
            # Another process holds the lock: the turn waits for the store, not the model.
            return f"waiting for the session database ({format_duration(store_wait)})"
        silent = now - self.last_chunk
        if silent >= SILENCE_AFTER:
            return f"stream silent for {format_duration(silent)}"
        label = _PHASE_LABELS.get(self.phase, self.phase)
        return f"{label} · {format_duration(now - self.turn_started)}"


_PHASE_LABELS = {
    "waiting": "waiting for the first token",
    "thinking": "thinking",
    "writing": "writing",
}
_STEPS: dict[type, Callable[[TurnState, Any, float], None]] = {
    ev.TurnStarted: TurnState._started,
    ev.RequestStarted: TurnState._waiting,
    ev.ReasoningDelta: TurnState._thinking,
    ev.TextDelta: TurnState._writing,
    ev.ToolCallDelta: TurnState._writing,
    ev.ToolStarted: TurnState._tool,
    ev.ToolApprovalAnswered: TurnState._answered,
    ev.ToolFinished: TurnState._waiting,
    ev.Retrying: TurnState._retrying,
    ev.McpWaiting: TurnState._mcp_waiting,
    ev.CompactionStarted: TurnState._compacting,
    ev.CompactionProgress: TurnState._summary_grew,
    ev.CompactionFinished: TurnState._compacted,
    ev.TurnFinished: TurnState._finished,
}
"""Which events move the turn state, and how."""


class StatusHost(Protocol):
    """What the status presenter uses of the app: the agent (None before the start), the
    turns and the approval flow (whether work runs or waits), the panels and lines it
    draws, its timers and the test probes."""

    config: Config
    agent: Agent | None
    db: SessionDB | None
    turns: TurnController
    approval: ApprovalFlow
    keys: KeyMap
    probes: Probes

    @property
    def is_running(self) -> bool:
        """True while the app runs (not yet closing)."""
        ...

    @property
    def status_panel(self) -> StatusPanel:
        """The status panel widget."""
        ...

    @property
    def status_line(self) -> StatusLine:
        """The one-line status."""
        ...

    @property
    def sessions_panel(self) -> SessionsPanel:
        """The sessions panel widget."""
        ...

    @property
    def working_line(self) -> WorkingLine:
        """The spinner under the transcript."""
        ...

    @property
    def stall_banner(self) -> StallBanner:
        """The stall banner above the composer."""
        ...

    def set_timer(
        self,
        delay: float,
        callback: Callable[[], Any] | None = None,  # noqa: V107
        *,
        name: str | None = None,
        pause: bool = False,
    ) -> Timer:
        """Call `callback` once after `delay` seconds."""
        ...

    def set_interval(
        self,
        interval: float,
        callback: Callable[[], Any] | None = None,  # noqa: V107
        *,
        name: str | None = None,
        repeat: int = 0,  # noqa: V107
        pause: bool = False,
    ) -> Timer:
        """Call `callback` every `interval` seconds."""
        ...


def background_rows() -> tuple[str, ...]:
    """The running background processes as the panel lists them (G2); once a second."""
    from agent import background
    from hermes_tui.processes_view import panel_rows

    return panel_rows(background.BACKGROUND.running())


class StatusPresenter:
    """Keeps the status panel, the busy session's clock and the stall banner current."""

    def __init__(self, app: StatusHost) -> None:
        self.app = app
        self.turn_state = TurnState()
        self.watchdog = StallWatchdog(app.config.agent.stall_timeout_seconds)
        self._text_drawn = float("-inf")  # the first batch of streamed text is drawn at once
        self._behind: Timer | None = None

    @property
    def _status(self) -> Any:
        return self.app.status_panel.status

    @property
    def _agent(self) -> Agent:
        return agent_of(self.app)

    def routes(self) -> Iterable[tuple[type, Callable[[Any], None]]]:
        """The events this presenter follows, each with its handler (see EventRouter)."""
        for kind in _STEPS:
            yield kind, self._advance
        yield ev.UsageUpdated, self._usage
        yield ev.TurnStarted, self._turn_started
        yield ev.CompactionStarted, self._compaction_started
        yield ev.CompactionProgress, self._compaction_progress
        yield ev.CompactionFinished, self._compaction_finished
        yield ev.McpStatus, self._mcp
        yield ev.TurnError, lambda _event: self.set_state("error")
        yield ev.TurnFinished, self._turn_finished

    # -- one event at a time -------------------------------------------------------------------
    def _advance(self, event: ev.AgentEvent) -> None:
        self.turn_state.apply(event, self.app.probes.clock())

    def _usage(self, usage: ev.UsageUpdated) -> None:
        # The session's totals, kept by the agent (the stored ones at resume, plus this run's).
        status = self._status
        status.input_tokens = usage.total_input_tokens
        status.output_tokens = usage.total_output_tokens
        status.cost_usd = usage.total_cost_usd
        status.estimated = status.estimated or usage.estimated
        status.cost_estimated = usage.total_cost_estimated
        status.cache_read_tokens = usage.total_cache_read_tokens
        status.cache_write_tokens = usage.total_cache_write_tokens
        if usage.purpose == CallPurpose.SUBAGENT:  # their part of the totals, apart (G1)
            status.subagent_tokens += usage.input_tokens + usage.output_tokens
            if usage.cost_usd is not None:
                status.subagent_cost_usd = (status.subagent_cost_usd or 0.0) + usage.cost_usd
        if usage.purpose != CallPurpose.TURN:
            return  # a summary's prompt is the old history: it says nothing of the context now
        # What the call left in the model's context, cached input included (either wire),
        # against the window the agent measures compaction by (None: nobody knows it).
        status.context_used = usage.context_tokens
        status.context_window = usage.context_window
        status.context_estimated = usage.estimated

    def _turn_started(self, _event: ev.TurnStarted) -> None:
        self._status.compaction, self._status.compacting = "", False

    def _compaction_started(self, _event: ev.CompactionStarted) -> None:
        self._status.compaction, self._status.compacting = COMPACTING.format(tokens=0), True

    def _compaction_progress(self, event: ev.CompactionProgress) -> None:
        self._status.compaction = COMPACTING.format(tokens=event.summary_tokens)

    def _compaction_finished(self, event: ev.CompactionFinished) -> None:
        self._status.compaction, self._status.compacting = event.message, False

    def _mcp(self, event: ev.McpStatus) -> None:
        """`MCP 2/3 ready · 1 failed` under the tokens (M1)."""
        parts = [f"MCP {event.ready}/{event.total} ready"]
        if event.starting:
            parts.append(f"{event.starting} starting")
        if event.failed:
            parts.append(f"{event.failed} failed")
        self._status.mcp = " · ".join(parts)

    def _turn_finished(self, event: ev.TurnFinished) -> None:
        self.set_state("idle" if event.status == "ok" else event.status)

    # -- after a batch -----------------------------------------------------------------------
    def after_batch(self, events: Sequence[ev.AgentEvent]) -> None:
        """Redraw for a batch; mark the busy session and let the banner go at once."""
        self._draw_for(events)
        agent = self.app.agent
        working = self.app.sessions_panel.working
        if (
            self.app.turns.busy
            and agent is not None
            and agent.session_id is not None
            and (working is None or working[0] != agent.session_id)
        ):
            # Mark the busy session now, not at the next tick (and the same on every run).
            self.refresh_liveness()
        if self.watchdog.warned:
            # Activity resumed: the banner goes now, not at the next tick.
            self._check_stall()

    def _draw_for(self, events: Sequence[ev.AgentEvent]) -> None:
        """Redraw after a batch; a batch of streamed text only moves the token estimate,
        which is redrawn at most every STATUS_STREAM_SECONDS.

        Each redraw is a frame, and Textual repaints the union of what changed in it: a
        status redraw on every batch made most frames of a stream repaint the whole screen.
        The first batch of text is drawn at once, and a skipped one when the interval ends,
        so the panel is never left behind.
        """
        if any(type(event) not in ev.STREAMED_TEXT for event in events):
            self._draw()
            return
        wait = self._text_drawn + STATUS_STREAM_SECONDS - time.monotonic()
        if wait <= 0:
            self._draw_streamed()
        elif self._behind is None:
            self._behind = self.app.set_timer(wait, self._catch_up)

    def _catch_up(self) -> None:
        self._behind = None  # this timer has fired: nothing left to stop
        self._draw_streamed()

    def _draw_streamed(self) -> None:
        self._text_drawn = time.monotonic()
        self._draw()

    def _draw(self) -> None:
        """Redraw now (a pending catch-up redraw is no longer needed)."""
        if self._behind is not None:
            self._behind.stop()
            self._behind = None
        try:
            self.refresh()
        except NoMatches:
            # A catch-up redraw that fires while the app shuts down finds its panels gone.
            if self.app.is_running:
                raise
            return
        drawn = self.app.probes.status_drawn
        if drawn is not None:
            drawn()

    # -- the panel ---------------------------------------------------------------------------
    def refresh(self) -> None:
        """Re-render the panel; while a turn runs, its honest state (L3)."""
        status = self._status
        agent = self.app.agent
        if agent is not None:
            status.instructions = tuple(f.listed for f in agent.context.files)
            # Live, resumed or new: the session's own list (N2).
            status.todos = tuple((i.text, i.status) for i in agent.state.todos.items)
            status.cost_cap = agent.usage_recorder.budget.cap("session")  # $2, /budget too
        if self.app.approval.waiting or not self.app.turns.busy:
            status.activity, status.streamed_tokens = "", None
        else:
            status.activity = self.turn_state.describe(self.app.probes.clock(), self._store_wait())
            # An estimate from the streamed characters until the provider reports usage.
            status.streamed_tokens = self.turn_state.streamed_chars // 4
        self.app.status_panel.refresh_status()
        self.draw_line()

    def draw_line(self) -> None:
        """The one-line status (shown while the panel is hidden): the state and the queue."""
        queue = self.app.turns.queue
        focus_key = self.app.keys.shown("queue.focus")
        self.app.status_line.show(self._status, len(queue), queue.paused, focus_key)

    def set_state(self, state: str, detail: str = "") -> None:
        """Show the turn's state word (idle, working, error...) and a detail under it."""
        self._status.state = state
        self._status.detail = detail
        self.refresh()

    def begin(self) -> None:
        """A turn (or a compaction) starts now, before its first event arrives."""
        clock = self.app.probes.clock
        self.turn_state.begin(clock())
        self.app.working_line.stop_key = self.app.keys.shown("turn.stop")
        self.app.working_line.start(self.activity, clock)

    def activity(self) -> str:
        """What the running work does now, in a few words (the spinner's text)."""
        if self.app.approval.waiting:
            return "waiting for your answer in the dialog"
        return self.turn_state.describe(self.app.probes.clock(), self._store_wait())

    def _store_wait(self) -> float | None:
        """How long the session database's lock has held writes up, while it does."""
        db = self.app.db
        return None if db is None else db.lock_wait_seconds

    def idle(self) -> None:
        """No work runs any more: the spinner goes, the panel says so."""
        self.app.working_line.stop()
        self.refresh_liveness()

    def show_model(self) -> None:
        """The current model, its provider and the window the context bar measures (C1)."""
        agent = self._agent
        status = self._status
        status.model = agent.model_ref
        status.provider = agent.provider_name
        status.sandbox = agent.sandbox.panel_label()
        status.sandbox_hides = agent.sandbox.hidden_label()
        status.mode = str(agent.approval_mode)
        status.context_window = agent.context_window
        self.show_setup()
        self.tick()

    def show_mode(self, mode: str) -> None:
        """The approval mode tool calls run under now (N1)."""
        self._status.mode = str(mode)
        self.refresh()

    def show_usage(self) -> None:
        """The session's totals as the agent holds them (a new or a resumed session)."""
        usage = self._agent.usage
        status = self._status
        status.input_tokens, status.output_tokens = usage.input_tokens, usage.output_tokens
        status.cost_usd = usage.cost_usd
        status.estimated = usage.estimated_calls > 0
        status.cost_estimated = usage.cost_from_table
        status.cache_read_tokens = usage.cache_read_tokens
        status.cache_write_tokens = usage.cache_write_tokens
        # A resumed session's last turn call (0 for a new session).
        status.context_used, status.context_estimated = usage.context_tokens, False

    def show_context(self, tokens: int) -> None:
        """What the model sees now, after a compaction measured it (a projection: estimated)."""
        self._status.context_used, self._status.context_estimated = tokens, True

    def show_hint(self, hint: str, level: str = "warning") -> None:
        """A hint under the turn state (how to leave the demo model, a missing key)."""
        self._status.hint, self._status.hint_level = hint, level

    def show_setup(self) -> str | None:
        """The hint the current model needs: its missing key (returned), the demo's setup."""
        app = self.app
        problem = self._agent.missing_key()
        if problem is not None:
            self.show_hint(problem, "error")
        elif app.config.demo and self._agent.provider_name == DEMO_PROVIDER:
            self.show_hint(app.config.setup_hint)
        else:
            self.show_hint("")
        return problem

    # -- once a second -----------------------------------------------------------------------
    def start(self) -> None:
        """Start the once-a-second tick."""
        self.app.set_interval(1.0, self.tick)

    def tick(self) -> None:
        """The turn state, the busy session's clock and the stall watchdog."""
        self.app.probes.ticks += 1
        try:
            self.refresh_liveness()
        except NoMatches:
            # A tick that fires while the app is shutting down finds its panels gone.
            if self.app.is_running:
                raise

    def refresh_liveness(self) -> None:
        """Redraw the turn state, check for a stall and show how long the session works."""
        self._status.background = background_rows()
        self.refresh()
        self._check_stall()
        agent = self.app.agent
        busy = self.app.turns.busy
        working = self.app.probes.clock() - self.turn_state.turn_started if busy else None
        self.app.sessions_panel.set_working(agent.session_id if agent else None, working)

    def _check_stall(self) -> None:
        """A busy turn silent while input waits shows the banner once per episode (L2)."""
        agent = self.app.agent
        if agent is None:
            return
        idle_for = agent.activity.idle_for()
        verdict = self.watchdog.check(
            busy=self.app.turns.busy and not self.app.approval.waiting,
            waiting=len(self.app.turns.queue),
            idle_for=idle_for,
        )
        banner = self.app.stall_banner
        if verdict == "warn":
            banner.warn(self.watchdog.message(idle_for))
        elif verdict == "clear":
            banner.clear()
        elif self.watchdog.warned:
            banner.update_text(self.watchdog.message(idle_for))
