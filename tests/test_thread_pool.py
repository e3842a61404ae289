"""DaemonThreadPool: tool calls and tool phases on reused daemon threads (hookstream._agentloop.thread_pool)."""

from __future__ import annotations

import threading

from hookstream._agentloop.thread_pool import DaemonThreadPool


def test_an_idle_thread_takes_the_next_job_and_names_itself() -> None:
    pool = DaemonThreadPool()
    seen: list[tuple[int, str]] = []
    for name in ("hookstream-tool-a", "hookstream-tool-b"):
        done = threading.Event()

        def job(done: threading.Event = done) -> None:
            t = threading.current_thread()
            seen.append((t.ident or 0, t.name))
            done.set()

        pool.submit(job, name)
        assert done.wait(30)
        # The thread counts itself idle after the job returns; wait for that before the next submit.
        for _ in range(3000):
            if pool._idle:
                break
            threading.Event().wait(0.01)
    assert [n for _, n in seen] == ["hookstream-tool-a", "hookstream-tool-b"]
    assert seen[0][0] == seen[1][0]  # one thread, reused


def test_a_busy_thread_is_not_waited_for_and_a_raising_job_does_not_end_the_pool() -> None:
    pool = DaemonThreadPool()
    release = threading.Event()
    started = threading.Barrier(3)

    def stuck() -> None:  # an abandoned tool: holds its thread until released
        started.wait()
        release.wait()

    def boom() -> None:
        started.wait()
        raise RuntimeError("boom")

    pool.submit(stuck, "stuck")
    pool.submit(boom, "boom")
    started.wait(30)  # both ran at once, on two threads
    ok = threading.Event()
    pool.submit(ok.set, "after")
    assert ok.wait(30)
    release.set()


def test_many_threads_submit_at_once_and_every_job_runs() -> None:
    pool = DaemonThreadPool(idle_seconds=0.01)  # threads end while others submit: no job may be lost
    n, rounds = 16, 20
    ran = threading.Semaphore(0)
    barrier = threading.Barrier(n)

    def submitter() -> None:
        barrier.wait()
        for _ in range(rounds):
            pool.submit(ran.release, "job")

    threads = [threading.Thread(target=submitter) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for _ in range(n * rounds):
        assert ran.acquire(timeout=30)
