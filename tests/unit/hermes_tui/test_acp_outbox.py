"""E1: a slow ACP client slows the turn down; what waits for it is bounded, never a queue
that grows. A real worker thread streams into the Outbox while the client's writes hang."""

from __future__ import annotations

import asyncio
import threading

from waits import holds_for, wait_until

from hermes_tui.acp.outbox import Outbox


def test_a_slow_client_holds_the_worker_at_the_bound_and_gets_everything_in_order():
    """E1: with the client stuck, at most `limit` sends wait and the worker blocks; once it
    reads again every send arrives, in order."""
    loop = asyncio.new_event_loop()
    runner = threading.Thread(target=loop.run_forever, daemon=True)
    runner.start()
    outbox, pump = asyncio.run_coroutine_threadsafe(_make(loop), loop).result(10)
    client_reads = threading.Event()
    got: list[int] = []

    def send(n: int):
        async def write() -> None:
            while not client_reads.is_set():  # the client's pipe is full
                await asyncio.sleep(0.01)  # the stuck client itself, not a wait for a state
            got.append(n)

        return write

    put = []
    worker = threading.Thread(target=lambda: [put.append(outbox.put(send(n))) for n in range(200)])
    worker.start()
    try:
        wait_until(lambda: outbox.waiting == outbox.limit, what="the outbox filled")
        assert holds_for(lambda: len(put) <= outbox.limit + 1, 0.3), "the worker went on"
        assert outbox.most_waiting <= outbox.limit
        client_reads.set()
        wait_until(lambda: len(got) == 200, what="every send written")
        assert got == list(range(200))
        assert outbox.most_waiting <= outbox.limit
    finally:
        client_reads.set()
        outbox.close()
        worker.join(10)
        loop.call_soon_threadsafe(pump.cancel)
        wait_until(pump.done, what="the pump ended")
        loop.call_soon_threadsafe(loop.stop)
        runner.join(10)
        loop.close()


def test_a_client_that_left_releases_the_waiting_worker():
    """E1: once the connection is gone, a worker waiting for room gives up (no hang)."""
    loop = asyncio.new_event_loop()
    outbox = Outbox(loop, limit=1)
    # The one credit is taken by a send that is never written (no pump runs).
    assert outbox.put(lambda: asyncio.sleep(0))  # a send, never run: no time passes
    outbox.close()
    assert outbox.put(lambda: asyncio.sleep(0)) is False  # a send, never run: no time passes
    loop.close()


async def _make(loop: asyncio.AbstractEventLoop) -> tuple[Outbox, asyncio.Task[None]]:
    outbox = Outbox(loop, limit=8)
    return outbox, loop.create_task(outbox.pump())
