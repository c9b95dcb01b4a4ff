"""The inbox: steer generations, seal-and-drain, and the visible input queue (T1, T3, T6)."""

from __future__ import annotations

import threading

from agent.inbox import Inbox, InputQueue


def test_steer_is_refused_when_no_turn_is_open():
    inbox = Inbox()
    assert inbox.steer("early") is False


def test_accepted_steers_are_taken_once():
    inbox = Inbox()
    inbox.open_generation()
    assert inbox.steer("a") and inbox.steer("b")
    assert inbox.take() == ["a", "b"]
    assert inbox.take() == []


def test_seal_returns_undelivered_steers_and_refuses_later_ones():
    inbox = Inbox()
    first = inbox.open_generation()
    inbox.steer("left over")
    assert inbox.seal_and_drain() == "left over"
    assert inbox.steer("too late") is False
    assert inbox.seal_and_drain() is None
    assert inbox.open_generation() == first + 1


def test_generations_count_from_one():
    inbox = Inbox()
    assert inbox.take() == []  # nothing accepted before the first turn
    assert inbox.seal_and_drain() is None
    assert inbox.open_generation() == 1
    assert inbox.open_generation() == 2


def test_t3_two_steers_pending_at_seal_come_back_joined_in_order():
    """T3: every steer that won the lock comes back once, in the order it was sent."""
    inbox = Inbox()
    inbox.open_generation()
    assert inbox.steer("first") and inbox.steer("second")
    assert inbox.seal_and_drain() == "first\n\nsecond"
    assert inbox.take() == []


def test_a_new_generation_drops_nothing_it_should_keep():
    # A turn opens its generation only after the previous one was sealed and drained.
    inbox = Inbox()
    inbox.open_generation()
    inbox.steer("old")
    assert inbox.seal_and_drain() == "old"
    inbox.open_generation()
    assert inbox.steer("new") is True
    assert inbox.take() == ["new"]


def test_concurrent_steers_and_seal_lose_nothing_and_duplicate_nothing():
    for _ in range(200):
        inbox = Inbox()
        inbox.open_generation()
        accepted, refused = [], []
        barrier = threading.Barrier(5)

        def sender(n: int) -> None:
            barrier.wait()
            for k in range(20):
                text = f"{n}-{k}"
                (accepted if inbox.steer(text) else refused).append(text)

        threads = [threading.Thread(target=sender, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        barrier.wait()
        delivered = inbox.take()
        drained = inbox.seal_and_drain()
        for t in threads:
            t.join()
        drained_items = drained.split("\n\n") if drained else []
        assert sorted(delivered + drained_items) == sorted(accepted)
        assert not set(accepted) & set(refused)
        assert len(accepted) + len(refused) == 80


def test_t1_queued_items_default_to_the_queued_origin_and_have_distinct_ids():
    queue = InputQueue()
    assert queue.paused is False
    items = [queue.push(text) for text in ("a", "b", "c")]
    assert [item.origin for item in items] == ["queued"] * 3
    assert [item.id for item in items] == [1, 2, 3]
    assert [item.id for item in queue.items] == [1, 2, 3]
    assert repr(items[0]) == "QueuedInput(1, 'a', queued)"
    assert queue.remove(items[1].id) is items[1]
    assert queue.remove(items[1].id) is None  # removed once
    assert [item.text for item in queue.items] == ["a", "c"]


def test_t6_an_item_put_back_runs_before_the_rest():
    queue = InputQueue()
    queue.push("second")
    taken = queue.push("first")
    queue.remove(taken.id)
    queue.put_back(taken)
    assert [item.text for item in queue.items] == ["first", "second"]
    assert queue.pop_next() is taken


def test_t6_a_paused_queue_resumes():
    queue = InputQueue()
    queue.push("kept")
    queue.pause()
    assert queue.paused is True and queue.pop_next() is None
    queue.resume()
    assert queue.paused is False
    assert queue.pop_next().text == "kept"


def test_input_queue_order_remove_and_pause():
    queue = InputQueue()
    a = queue.push("a")
    queue.push("b")
    queue.push("late steer", origin="steer")
    assert [i.text for i in queue.items] == ["a", "b", "late steer"]
    assert queue.remove(a.id).text == "a"
    queue.pause()
    assert queue.pop_next() is None and len(queue) == 2
    queue.resume()
    assert queue.pop_next().text == "b"
    assert queue.pop_next().origin == "steer"
    assert queue.pop_next() is None
