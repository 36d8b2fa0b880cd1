"""Work on threads that may be given up (tools/background.py): each tool call and model call runs
on one, so threads are kept for the next job instead of started for each, and a job given up
never holds the next one back."""

from __future__ import annotations

import contextvars
import threading
import time

from opsbot.tools.background import Job, _Workers

marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker", default="unset")


def test_a_thousand_quick_jobs_in_a_row_run_on_a_handful_of_threads() -> None:
    threads: set[threading.Thread] = set()
    for n in range(1000):
        job = Job(lambda n=n: (n * 2, threading.current_thread()), f"quick-{n}")
        job.join(5)
        value, thread = job.result()
        assert value == n * 2
        threads.add(thread)
    assert len(threads) <= 2


def test_a_job_given_up_keeps_its_thread_and_the_next_job_gets_another() -> None:
    release = threading.Event()
    stuck = Job(lambda: release.wait(30), "stuck")
    try:
        quick = Job(lambda: "done", "quick")
        quick.join(2)
        assert quick.result() == "done" and stuck.running
    finally:
        release.set()
    stuck.join(2)
    assert not stuck.running


def test_a_job_runs_in_the_callers_context_and_its_error_is_raised_to_the_caller() -> None:
    token = marker.set("the caller's")
    try:
        seen = Job(marker.get, "context")
        seen.join(2)
        assert seen.result() == "the caller's"
    finally:
        marker.reset(token)

    def fail() -> None:
        raise ValueError("from the job")

    failed = Job(fail, "fails")
    failed.join(2)
    try:
        failed.result()
    except ValueError as exc:
        assert str(exc) == "from the job"
    else:
        raise AssertionError("the job's error was not raised")


def test_a_kept_thread_ends_once_idle_for_its_time() -> None:
    workers = _Workers(idle_s=0.05)
    done = threading.Event()
    ran_on: list[threading.Thread] = []
    names: list[str] = []

    def work() -> None:
        ran_on.append(threading.current_thread())
        names.append(threading.current_thread().name)
        done.set()

    workers.start(work, "opsbot-idle-test")
    assert done.wait(2) and names == ["opsbot-idle-test"] and ran_on[0].daemon
    deadline = time.monotonic() + 3
    while workers.idle and time.monotonic() < deadline:
        time.sleep(0.01)
    ran_on[0].join(2)
    assert workers.idle == 0 and not ran_on[0].is_alive()
