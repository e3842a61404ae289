"""RunDeadlines: every run's max_run_seconds on one thread per process (hookstream_server.limits)."""

from __future__ import annotations

import threading

from hookstream_server.limits import RunDeadlines


def test_callbacks_run_in_deadline_order_and_a_cancelled_one_never_runs() -> None:
    deadlines = RunDeadlines()
    ran: list[str] = []
    done = threading.Event()
    later = deadlines.add(0.2, lambda: (ran.append("later"), done.set()))
    deadlines.add(0.05, lambda: ran.append("sooner"))
    gone = deadlines.add(0.01, lambda: ran.append("cancelled"))
    deadlines.cancel(gone)
    assert done.wait(30)
    assert ran == ["sooner", "later"]
    deadlines.cancel(later)  # already ran: nothing happens


def test_a_raising_callback_does_not_stop_the_others() -> None:
    deadlines = RunDeadlines()
    done = threading.Event()

    def boom() -> None:
        raise RuntimeError("boom")

    deadlines.add(0.0, boom)
    deadlines.add(0.01, done.set)
    assert done.wait(30)


def _deadline_threads() -> int:
    return sum(t.name == "hookstream-run-deadlines" for t in threading.enumerate())


def test_shared_by_many_threads_one_deadline_thread() -> None:
    before = _deadline_threads()
    deadlines = RunDeadlines()
    n = 32
    barrier = threading.Barrier(n)
    fired = threading.Semaphore(0)
    keep: list[int] = []
    lock = threading.Lock()

    def run(i: int) -> None:
        barrier.wait()
        key = deadlines.add(0.001 * (i % 4), fired.release)
        if i % 2:
            deadlines.cancel(key)  # may already have run: then it counts as fired
        else:
            with lock:
                keep.append(key)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for _ in keep:
        assert fired.acquire(timeout=30)
    assert _deadline_threads() == before + 1  # 32 runs' deadlines, one thread
