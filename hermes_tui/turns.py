"""The turn flow: busy and idle, the input queue, and one way to start and end every piece
of agent work (a turn, a /continue, a /compact) (T1-T6)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from textual.message import Message
from textual.widget import Widget
from textual.worker import Worker, WorkerState

from agent import events as ev
from agent.inbox import InputQueue, QueuedInput
from agent.kinds import BusyInputMode, TurnStatus
from hermes_tui.doors import Notices, RunsWorkers, started
from hermes_tui.safe_text import safe_text

if TYPE_CHECKING:
    from agent.loop import Agent
    from hermes_tui.bridge import Bridge
    from hermes_tui.gc_pacing import GcPacing
    from hermes_tui.keys import KeyMap
    from hermes_tui.presenter import EventRouter
    from hermes_tui.probes import Probes
    from hermes_tui.sessions import SessionsController
    from hermes_tui.status import StatusPresenter
    from hermes_tui.widgets.composer import Composer
    from hermes_tui.widgets.status_panel import StatusPanel
    from hermes_tui.widgets.transcript import Transcript

WORK_GROUP = "work"
"""The worker group of agent work: one piece at a time."""
PAUSING_OUTCOMES = frozenset({TurnStatus.STOPPED, TurnStatus.ERROR, TurnStatus.CAPPED})
"""Turn outcomes after which the input queue waits for the user instead of running on (T6)."""
COMPACT_BUSY = "A turn is running: /compact works when the agent is idle."
QUEUE_ORIGINS: dict[str, str] = {BusyInputMode.STEER: "steer", BusyInputMode.INTERRUPT: "redirect"}
"""How a steer or redirect no turn took is marked in the queue."""
_ENDED = (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED)
STOPPED_BEFORE = "Stopped before the model was asked. "
"""How the notice of a turn stopped while it was being sent begins (Z1)."""


class WorkKind(StrEnum):
    """What a piece of agent work is: it decides how it starts and how its end is shown."""

    TURN = "turn"
    CONTINUE = "continue"
    COMPACTION = "compaction"


@dataclass(frozen=True)
class Prompt:
    """A turn whose model text is not what the user typed (a custom command, /init)."""

    text: str
    shown: str
    model: str | None = None


class WorkEnded(Message):
    """The work's worker finished; posted behind any event batch already in the queue."""

    def __init__(self, worker: Worker[Any], state: WorkerState) -> None:
        super().__init__()
        self.worker = worker
        self.state = state


STEER_SENT = (
    "↳ steer sent: the model reads it after its current step; if this answer is its last, "
    "the steer is sent as a message after the turn, behind anything already queued."
)
"""What a steer a running turn took says (it cannot know yet whether another step comes)."""


def steer_queued(earlier: int, paused: bool) -> str:
    """Where a steer the turn ended before went: next, behind `earlier` items, or paused."""
    said = "The turn ended before your steer reached the model: "
    where = f"behind {_items(earlier)} queued before it" if earlier else "first in line"
    if paused:
        return said + f"it waits in the paused queue, {where}."
    if earlier == 0:
        return said + "it is sent now, as your next message."
    return said + f"it waits in the queue, {where}."


def _items(count: int) -> str:
    return f"{count} item{'s' if count > 1 else ''}"


def quote(text: str, width: int = 60) -> str:
    """`text` on one line, cut to `width`, in quotes."""
    line = " ".join(text.split())
    return f"“{line[: width - 1]}…”" if len(line) > width else f"“{line}”"


PAINT_WAIT = 1.0
"""Seconds a turn waits at most for its bubble's frame before its thread starts anyway."""


async def painted(widget: Widget) -> None:
    """Return once the frame showing `widget`'s latest change is drawn (bounded).

    A turn's thread starts with pure-Python work (the history made into a request, the request
    sent and read), and threads share one interpreter: started before the bubble's frame, it
    slowed that frame, by about a third in an interleaved trial, empty session or long (Z2).
    """
    try:
        await asyncio.wait_for(widget.wait_for_refresh(), PAINT_WAIT)
    except TimeoutError:
        pass  # a screen that does not paint (being torn down) must not hold the turn


class TurnHost(Notices, RunsWorkers, Protocol):
    """What the turn flow uses of the app: the agent (after the start), the event bridge and
    router, the transcript, the composer, the status and its panel, the sessions, the keys."""

    agent: Agent | None
    bridge: Bridge
    gc_pacing: GcPacing
    router: EventRouter | None
    probes: Probes
    keys: KeyMap
    status: StatusPresenter
    sessions: SessionsController

    @property
    def transcript(self) -> Transcript:
        """The transcript widget."""
        ...

    @property
    def composer(self) -> Composer:
        """The composer widget."""
        ...

    @property
    def status_panel(self) -> StatusPanel:
        """The status panel widget."""
        ...

    def post_message(self, message: Message) -> bool:
        """Queue `message` on the app."""
        ...

    def refresh_bindings(self) -> None:
        """Show the keys that can act now."""
        ...


class TurnController:
    """Starts agent work, routes input typed meanwhile, and settles each end (T1, T3, T6)."""

    def __init__(self, app: TurnHost) -> None:
        self.app = app
        self.queue = InputQueue()
        self._idle = asyncio.Event()
        self._idle.set()
        self._item: QueuedInput | None = None  # the queued item the running turn came from
        self._prompts: dict[int, Prompt] = {}  # queued items that run as a Prompt
        self._stop_asked = False  # a stop while busy: it holds until the work's end is settled
        self.stops = 0
        """How many stops were asked: a line sent before a stop and not yet run sees it."""

    @property
    def _router(self) -> EventRouter:
        return started(self.app.router, "event router")  # made on mount

    @property
    def busy(self) -> bool:
        """True while work runs (from its start until its last event is shown)."""
        return not self._idle.is_set()

    async def wait_idle(self, timeout: float = 30.0) -> None:
        """Wait until no work runs (queued input that runs on counts as the same wait)."""
        await asyncio.wait_for(self._idle.wait(), timeout)

    # -- input -------------------------------------------------------------------------------
    async def send(self, text: str, mode: str) -> Worker[Any] | None:
        """Start a turn when idle; during one, queue, steer or redirect (`mode`) the text (T1).

        Nothing is dropped: a steer or redirect that no turn takes joins the queue behind
        older items. Sending while idle also releases a queue paused by a stop (T6).
        """
        if not self.busy:
            self.queue.resume()
            return await self.start_turn(text)
        agent = started(self.app.agent, "agent")
        if mode == BusyInputMode.STEER and agent.steer(text):
            # Whether the model takes another step is not known while it answers: say both.
            await self.app.notice(f"{STEER_SENT} {quote(text)}")
        elif mode == BusyInputMode.INTERRUPT and agent.redirect(text):
            await self.app.notice(f"↳ redirecting the model: {quote(text)}")
        else:
            self.queue.push(text, QUEUE_ORIGINS.get(mode, "queued"))
            self.show_queue()
        return None

    async def send_prompt(self, prompt: Prompt) -> None:
        """Run `prompt` as a turn now, or queue it (shown as typed) behind older input."""
        if not self.busy:
            self.queue.resume()
            await self.start_turn(prompt.text, prompt=prompt)
            return
        item = self.queue.push(prompt.shown, "command")
        self._prompts[item.id] = prompt
        self.show_queue()

    def stop(self) -> None:
        """Stop the running work, at any moment of it: while it is being sent, it never
        starts; once it runs, the agent stops it. The queue pauses (T6, Z1)."""
        self.stops += 1
        if self.busy:
            self._stop_asked = True
            if self.app.agent is not None:
                self.app.agent.stop()

    def hold(self, text: str) -> None:
        """Queue `text`, paused: it was sent before a stop that came ahead of its turn (Z1)."""
        self.queue.push(text)
        self.queue.pause()
        self.show_queue()

    async def refused(self, what: str) -> bool:
        """Say so and return True while work runs: `what` waits for the agent to be idle."""
        if self.busy:
            await self.app.notice(
                f"The agent is working: press escape to stop it before you {what}.", "warning"
            )
        return self.busy

    # -- starting ----------------------------------------------------------------------------
    async def start_turn(
        self, text: str, item: QueuedInput | None = None, *, prompt: Prompt | None = None
    ) -> Worker[Any] | None:
        """Run one user turn with `text` (from the queued `item`, if it came from there);
        a `prompt` is shown as the user typed it and may run on a model of its own."""
        agent = started(self.app.agent, "agent")
        if prompt is None:
            return await self.begin(WorkKind.TURN, text, lambda: agent.run_turn(text), item)
        if item is not None:
            self._prompts[item.id] = prompt  # kept until the turn has taken it (H7)

        def work() -> Any:
            return agent.run_turn(prompt.text, shown=prompt.shown, model=prompt.model)

        return await self.begin(WorkKind.TURN, prompt.shown, work, item)

    async def begin(
        self,
        kind: WorkKind,
        text: str,
        work: Callable[[], Any],
        item: QueuedInput | None = None,
    ) -> Worker[Any] | None:
        """Start `work` on a thread worker: the app is busy until its end has been shown.

        A stop asked while it is being sent (the user's message shown, the work not yet
        handed to the worker) means it never starts: None, and its text is given back.
        """
        self._item = item
        self._idle.clear()
        self.app.gc_pacing.hold()  # no full collection mid-stream: one at idle (gc_pacing.py)
        self.app.status.begin()
        transcript = self.app.transcript
        hold = self.app.probes.send_hold
        if hold is not None:
            await hold()
        if kind is WorkKind.TURN:
            await transcript.add_user(text)
        elif kind is WorkKind.CONTINUE:
            from hermes_tui.widgets.notes import RecoveryNote  # not on the first frame's path

            await transcript.add(RecoveryNote())
        # Like a sent message: what it brings shows at the bottom, so follow it.
        transcript.anchor()
        await painted(transcript)
        if self._stop_asked:
            await self._not_started(kind, text, item)
            return None
        self.app.status.set_state("compacting" if kind is WorkKind.COMPACTION else "working")
        self.app.refresh_bindings()
        if kind is not WorkKind.COMPACTION:
            # From here until the worker runs, a stop reaches the agent, which keeps it (Z1).
            started(self.app.agent, "agent").expect_turn()
        return self.app.run_worker(
            work, name=kind, group=WORK_GROUP, thread=True, exclusive=True, exit_on_error=False
        )

    async def _not_started(self, kind: WorkKind, text: str, item: QueuedInput | None) -> None:
        """The work was stopped before it started: no request, nothing written (Z1). It
        ends as a stopped turn ends, for the transcript and the status alike."""
        await self._router.apply([ev.stopped_on_the_way()])
        if kind is WorkKind.TURN:
            await self._give_back(text, item, STOPPED_BEFORE)
        await self.run_next_or_idle()

    # -- ending ------------------------------------------------------------------------------
    def worker_changed(self, event: Worker.StateChanged) -> None:
        """Post the end of agent work behind the batches the bridge posted before it."""
        if event.worker.group == WORK_GROUP and event.state in _ENDED:
            # A batch may still wait in the app's queue: a message posted now is handled
            # after it, so the work ends after its events. Events the worker emitted last may
            # still wait in the bridge for their frame's timer: posted now, they go ahead of
            # the end too. Left to the timer, they could land behind it, while `ended` (a
            # send job, off the message loop) shows the turn's notices: a failed turn's
            # marker row came after "your message is back in the input" on a loaded machine.
            self.app.bridge.flush()
            self.app.post_message(WorkEnded(event.worker, event.state))

    async def ended(self, message: WorkEnded) -> None:
        """The one end of every piece of work: its last events, its outcome, then what's next."""
        # Events still buffered in the bridge belong before the end.
        await self._router.apply(self.app.bridge.drain())
        worker, state = message.worker, message.state
        if worker.name == WorkKind.COMPACTION:
            await self._compaction_ended(worker, state)
        elif state == WorkerState.ERROR:
            error = worker.error
            await self.app.transcript.add_error(
                f"The turn failed unexpectedly: {type(error).__name__}: {error}. "
                "Your message is saved; send it again or start a /new session."
            )
            self.app.status.set_state("error")
            self.queue.pause()
        elif state == WorkerState.CANCELLED:
            self.app.status.set_state("idle")
        else:
            await self._settle(worker.result)
        await self.app.sessions.refresh()
        await self.run_next_or_idle()

    async def _compaction_ended(self, worker: Worker[Any], state: WorkerState) -> None:
        result = worker.result if state == WorkerState.SUCCESS else None
        if state == WorkerState.ERROR:
            error = worker.error
            await self.app.transcript.add_error(
                f"Compaction failed unexpectedly: {type(error).__name__}: {error}. "
                "Nothing was dropped."
            )
        elif result is not None and result.reason == "busy":
            await self.app.notice(result.message or COMPACT_BUSY, "warning")
        elif result is not None and result.ok:
            self.app.status.show_context(result.tokens_after)
        self.app.status.set_state("idle")

    async def run_next_or_idle(self) -> None:
        """Start the next queued input, else go idle (nothing waits, or the queue is paused)."""
        if self._stop_asked:
            # A stop while this work ended (or before it started) holds the queue too (T6).
            self._stop_asked = False
            self.queue.pause()
        item = self.queue.pop_next()
        self.show_queue()
        if item is not None:
            # The queue runs on without an idle moment in between: busy stays set.
            await self.start_turn(item.text, item, prompt=self._prompts.get(item.id))
            return
        self.app.gc_pacing.settle()  # the turn's catch-up collection, once idle
        # Last, with no await after it: a waiter on the turn sees every row in place.
        self._idle.set()
        self.app.refresh_bindings()
        self.app.status.idle()

    async def _settle(self, result: Any) -> None:
        """Put every text the turn did not consume back in the user's hands (T3, T6, L4)."""
        if self._item is not None and not result.unsent:
            self._prompts.pop(self._item.id, None)
        if result.unsent:
            stopped = result.status == TurnStatus.STOPPED
            await self._give_back(result.unsent, self._item, STOPPED_BEFORE if stopped else "")
        elif getattr(result, "withheld", None):
            await self._offer_withheld(result.withheld)
        pauses = result.status in PAUSING_OUTCOMES or bool(result.unsent) or self._stop_asked
        if result.pending_steer:
            # Accepted but not delivered before the turn ended: behind older input, once.
            self.queue.push(result.pending_steer, "steer")
            await self.app.notice(steer_queued(len(self.queue) - 1, pauses or self.queue.paused))
        if result.status in PAUSING_OUTCOMES or result.unsent:
            self.queue.pause()
            if len(self.queue):
                resume = self.app.keys.shown("queue.resume")
                await self.app.notice(
                    f"The queue is paused ({len(self.queue)} waiting): {resume} or "
                    "/queue resume runs it; sending a message also resumes it.",
                    "warning",
                )

    async def _give_back(self, text: str, item: QueuedInput | None, why: str) -> None:
        """Text a turn never took goes back where the user finds it, never over newer typing:
        into an empty composer; to the head of the queue, paused, when it came from there or
        the composer holds a newer draft (H7, Z1). `why` opens the notice."""
        composer = self.app.composer
        if item is not None:
            self.queue.put_back(item)
            self.show_queue()
            where = "Your message is back in the queue."
        elif composer.text.strip():
            self.queue.push_front(text)
            self.show_queue()
            where = "Your draft is kept; the message waits at the head of the queue."
        else:
            # The input draws what it holds: a control character would reach the terminal.
            shown = safe_text(text)
            composer.load_text(shown)
            composer.move_cursor(composer.document.end)
            visible = " (its control characters shown as symbols)" if shown != text else ""
            where = f"Your message is back in the input{visible}."
        await self.app.notice(f"{why}{where}", "warning")

    async def _offer_withheld(self, text: str) -> None:
        """A failed turn's text no model answered: the agent never sends it again, so it is
        offered back in the input to send on purpose; a draft there is never overwritten."""
        composer = self.app.composer
        if composer.text.strip():
            await self.app.notice(
                "Your draft is kept; ↑ in the input brings back the failed message.", "warning"
            )
            return
        # The input draws what it holds: a control character would reach the terminal (H1).
        shown = safe_text(text)
        composer.load_text(shown)
        composer.move_cursor(composer.document.end)
        visible = " (its control characters shown as symbols)" if shown != text else ""
        await self.app.notice(
            f"Your message is back in the input{visible}: send it again or clear it."
        )

    # -- the queue ---------------------------------------------------------------------------
    def show_queue(self) -> None:
        """Show the queue in the status panel (and the keys that act on it in the footer)."""
        keys = self.app.keys
        self.app.status_panel.queue_view.show(
            self.queue.items,
            paused=self.queue.paused,
            focus_key=keys.shown("queue.focus"),
            resume_key=keys.shown("queue.resume"),
        )
        self.app.status.draw_line()
        self.app.refresh_bindings()

    async def enqueue(self, text: str) -> None:
        """Queue `text` behind the rest; it runs at once when nothing else does."""
        self.queue.push(text)
        self.show_queue()
        if not self.busy:
            await self.run_next_or_idle()

    async def resume_queue(self) -> None:
        """Let a paused queue run again."""
        self.queue.resume()
        self.show_queue()
        if not self.busy:
            await self.run_next_or_idle()

    def remove_queued(self, item_id: int) -> None:
        """Delete one queued item."""
        self.queue.remove(item_id)
        self._prompts.pop(item_id, None)
        self.show_queue()
        if not len(self.queue):
            self.app.composer.focus()

    def edit_queued(self, item_id: int) -> None:
        """Take a queued item out and into the composer, after any draft there (never lost)."""
        item = self.queue.remove(item_id)
        self._prompts.pop(item_id, None)
        if item is None:
            return
        composer = self.app.composer
        draft = composer.text
        composer.load_text(f"{draft.rstrip()}\n{item.text}" if draft.strip() else item.text)
        composer.move_cursor(composer.document.end)
        self.show_queue()
        composer.focus()
