"""Exactly one answer under faults (`.venv/bin/python tests/bench/bench_faults.py [name ...]`).

A script, not a test. For each fault, two `opsbot serve --http` processes with default settings
(a 15 s drain lease) share one real Redis, the fake Slack Web API and a scripted model whose
every reply takes MODEL_DELAY_S. THREADS threads of two messages each (a mention, then a reply in
its thread; one fault 20 threads of five) are sent over SEND_OVER_S, alternately to either
process, and FAULT_AT_S after the first the fault strikes:

- kill -9: one of the two processes is SIGKILLed;
- redis restart: Redis is SIGKILLed and started again DOWN_S later, with no persistence (it comes
  back empty) or with an append-only file fsynced every second (`appendfsync everysec`, the default);
- sentinel failover: `SENTINEL FAILOVER` (a master, a replica, three sentinels; REDIS_URL is a
  redis+sentinel:// URL);
- slow Slack: every `chat.postMessage` for a while is answered 20 s after it took effect, past the
  client's 15 s timeout (streaming off, so answers are posted with chat.postMessage);
- 429 / 500 storms: 30% of the calls opsbot makes to post or look are refused, for STORM_S.

A delivery that is not acked with 200 is sent again, as Slack does, with `X-Slack-Retry-Num`, but
on a compressed schedule (RETRY_AFTER_S instead of Slack's at once / 1 min / 5 min). For each fault
the bench prints messages sent, answered once / twice or more / never, threads answered out of
order, and the longest wait from a message's first delivery to its answer. Exit status 1 when any
message is not answered exactly once or any thread is out of order.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.fakes import slack_payloads as payloads  # noqa: E402
from tests.fakes.model_server import ModelServer, Reply, is_summary_request  # noqa: E402
from tests.fakes.redis_server import RedisServer, SentinelSetup  # noqa: E402
from tests.fakes.serve_process import ServeProcess  # noqa: E402
from tests.fakes.slack_api import SlackApi  # noqa: E402

THREADS = 25
SEND_OVER_S = 3.0
FAULT_AT_S = 1.5
DOWN_S = 2.0
STORM_S = 10.0
MODEL_DELAY_S = 2.0
RETRY_AFTER_S = (1.0, 3.0, 6.0)
ANSWER_TIMEOUT_S = 150.0
SETTLE_S = 3.0

TOKEN = "xoxb-bench"
SECRET = "bench-signing-secret"
CHANNEL = "CFAULT"
EVENTS = "/slack/events"


def slow_answers(body: dict[str, Any]) -> Reply:
    if is_summary_request(body):
        return Reply(content="summary", delay_s=MODEL_DELAY_S)
    return Reply(content="answered", delay_s=MODEL_DELAY_S)


@dataclass
class Fault:
    name: str
    strike: Callable[[Any], None]  # given the Setup
    redis: str = "plain"  # plain | aof | sentinel
    env: dict[str, str] = field(default_factory=dict)
    before: Callable[[SlackApi], None] = lambda slack: None
    threads: int = THREADS
    per_thread: int = 2  # a mention, then replies in its thread


@dataclass
class Setup:
    processes: list[ServeProcess]
    slack: SlackApi
    redis: Any  # RedisServer or SentinelSetup


@dataclass
class Row:
    name: str
    sent: int
    once: int
    more: int
    never: int
    out_of_order: int
    longest_wait_s: float


def restart_redis(setup: Setup) -> None:
    setup.redis.stop()
    time.sleep(DOWN_S)
    setup.redis.start()


def storm(status: int) -> Callable[[Setup], None]:
    methods = ("chat.postMessage", "chat.startStream", "chat.appendStream", "chat.stopStream", "conversations.replies")

    def strike(setup: Setup) -> None:
        for n, method in enumerate(methods):
            setup.slack.flaky(method, rate=0.3, seed=n, status=status)

        def calm() -> None:
            time.sleep(STORM_S)
            for method in methods:
                setup.slack.flaky(method, rate=0)

        threading.Thread(target=calm, daemon=True).start()

    return strike


def slow_slack(slack: SlackApi) -> None:
    slack.late("chat.postMessage", respond_after_s=20.0, times=10)


FAULTS = [
    Fault("kill -9", lambda setup: setup.processes[0].kill()),
    Fault("redis restart, no persistence", restart_redis),
    Fault("redis restart, AOF", restart_redis, redis="aof"),
    Fault("redis restart, no persistence, 20 threads x 5", restart_redis, threads=20, per_thread=5),
    Fault("redis restart, AOF, 20 threads x 5", restart_redis, redis="aof", threads=20, per_thread=5),
    Fault("sentinel failover", lambda setup: setup.redis.failover(), redis="sentinel"),
    Fault("slow Slack (20 s posts)", lambda setup: None, env={"OPSBOT_SLACK__STREAM": "false"}, before=slow_slack),
    Fault("429 storm", storm(429)),
    Fault("500 storm", storm(500)),
]


@contextmanager
def redis_for(kind: str, workdir: Path) -> Iterator[tuple[Any, str]]:
    if kind == "sentinel":
        setup = SentinelSetup(workdir, sentinels=3, replicas=1, server_args=["--min-replicas-to-write", "1"])
        setup.start()
        try:
            yield setup, setup.url
        finally:
            setup.stop()
        return
    args = ["--appendonly", "yes", "--appendfsync", "everysec"] if kind == "aof" else []
    server = RedisServer(workdir, args=args)
    server.start()
    try:
        yield server, server.url
    finally:
        server.stop()


class Sender:
    """Delivers events as Slack does: again, with X-Slack-Retry-Num, while they get no 200."""

    def __init__(self, processes: list[ServeProcess]) -> None:
        self.processes = processes
        self.pool = ThreadPoolExecutor(64)
        self.given_up: list[tuple[str, list[int]]] = []  # never acked with 200: Slack gives these up

    def send(self, message: dict[str, Any], n: int) -> None:
        self.pool.submit(self._deliver, message, n)

    def _deliver(self, message: dict[str, Any], n: int) -> None:
        body = json.dumps(payloads.event_callback(message))
        statuses = []
        for attempt in range(len(RETRY_AFTER_S) + 1):
            headers = payloads.signed_headers(SECRET, body)
            if attempt:
                headers |= payloads.retry_headers(attempt)
            target = self.processes[(n + attempt) % len(self.processes)]
            try:
                status, _ = target.post(EVENTS, body, headers, timeout=3.0)
            except OSError:
                status = 0  # a killed process, a timeout: Slack counts it as not acked
            statuses.append(status)
            if status == 200:
                return
            if attempt == len(RETRY_AFTER_S):
                self.given_up.append((message["ts"], statuses))
                return
            time.sleep(RETRY_AFTER_S[attempt])

    def close(self) -> None:
        self.pool.shutdown(wait=True)


def answer_jobs(slack: SlackApi, thread_ts: str) -> list[str]:
    """The job ids of the thread's answers, in the order they were posted."""
    return [
        str(m["metadata"]["event_payload"]["job"])
        for m in slack.messages(CHANNEL, thread_ts)
        if (m.get("metadata") or {}).get("event_type") == "opsbot_answer"
    ]


def run(fault: Fault, workdir: Path) -> Row:
    with (
        redis_for(fault.redis, workdir) as (redis, url),
        SlackApi(token=TOKEN) as slack,
        ModelServer(slow_answers) as model,
    ):
        env = {
            "SLACK_BOT_TOKEN": TOKEN,
            "SLACK_SIGNING_SECRET": SECRET,
            "SLACK_API_URL": slack.base_url,
            "REDIS_URL": url,
            "OPENAI_BASE_URL": model.base_url,
            "OPSBOT_MODEL": "scripted",
            "OPSBOT_LLM__MAX_RETRIES": "0",
            **fault.env,
        }
        with ServeProcess(env) as first, ServeProcess(env) as second:
            fault.before(slack)
            setup = Setup([first, second], slack, redis)
            row = measure(fault, setup)
            if row.once != row.sent or row.out_of_order:
                for n, process in enumerate(setup.processes):
                    log = Path(tempfile.gettempdir()) / f"opsbot-faults-{fault.name.split()[0]}-{n}.log"
                    log.write_text(process.output())
                    print(f"  (process {n}'s output: {log})", file=sys.stderr)
            return row


def measure(fault: Fault, setup: Setup) -> Row:
    slack = setup.slack
    mentions = [payloads.app_mention(f"<@UBOT> question {n}", channel=CHANNEL) for n in range(fault.threads)]
    # Round by round: every thread's first reply, then every thread's second, ...
    replies = [
        payloads.message(f"then {n}.{r}", channel=CHANNEL, thread_ts=m["ts"])
        for r in range(1, fault.per_thread)
        for n, m in enumerate(mentions)
    ]
    messages = [*mentions, *replies]
    for message in messages:
        slack.add_message(CHANNEL, message["text"], ts=message["ts"], thread_ts=message.get("thread_ts"))
    in_thread = {m["ts"]: [m["ts"], *(r["ts"] for r in replies if r["thread_ts"] == m["ts"])] for m in mentions}
    job = {m["ts"]: f"T1:{CHANNEL}:{m['ts']}" for m in messages}
    sent_at: dict[str, float] = {}
    answered_at: dict[str, float] = {}
    sender = Sender(setup.processes)
    start = time.monotonic()
    gap = SEND_OVER_S / len(messages)
    struck = False
    for n, message in enumerate(messages):
        if not struck and time.monotonic() - start >= FAULT_AT_S:
            threading.Thread(target=fault.strike, args=(setup,), daemon=True).start()
            struck = True
        sent_at[message["ts"]] = time.monotonic()
        sender.send(message, n)
        time.sleep(gap)
    if not struck:
        threading.Thread(target=fault.strike, args=(setup,), daemon=True).start()

    deadline = time.monotonic() + ANSWER_TIMEOUT_S
    while time.monotonic() < deadline and len(answered_at) < len(messages):
        for mention in mentions:
            for done in answer_jobs(slack, mention["ts"]):
                ts = done.rsplit(":", 1)[1]
                answered_at.setdefault(ts, time.monotonic())
        time.sleep(0.1)
    time.sleep(SETTLE_S)
    sender.close()

    counts = {ts: 0 for ts in job}
    out_of_order = 0
    for mention in mentions:
        jobs = answer_jobs(slack, mention["ts"])
        for done in jobs:
            counts[done.rsplit(":", 1)[1]] = counts.get(done.rsplit(":", 1)[1], 0) + 1
        firsts = list(dict.fromkeys(jobs))
        if firsts != [job[ts] for ts in in_thread[mention["ts"]]][: len(firsts)]:
            out_of_order += 1
    waits = [answered_at[ts] - sent_at[ts] for ts in answered_at if ts in sent_at]
    never = [job[ts] for ts, count in counts.items() if count == 0]
    if never:
        print(f"  never answered: {', '.join(never)}", file=sys.stderr)
    more = [f"{job[ts]} ({count})" for ts, count in counts.items() if count > 1]
    if more:
        print(f"  answered more than once: {', '.join(more)}", file=sys.stderr)
    for ts, statuses in sender.given_up:
        print(f"  {job[ts]} was never acked: {statuses}", file=sys.stderr)
    return Row(
        fault.name,
        len(messages),
        sum(1 for c in counts.values() if c == 1),
        sum(1 for c in counts.values() if c > 1),
        sum(1 for c in counts.values() if c == 0),
        out_of_order,
        max(waits, default=float("nan")),
    )


def main(names: list[str]) -> int:
    chosen = [f for f in FAULTS if not names or any(n.lower() in f.name.lower() for n in names)]
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print("opsbot fault bench: two `opsbot serve --http` processes, default settings, fake Slack, real Redis")
    print(
        f"(load average before {load} on {os.cpu_count()} CPUs; "
        f"{THREADS} threads x 2 messages unless the fault says otherwise, model {MODEL_DELAY_S:g} s)"
    )
    print()
    print("| fault | sent | answered once | twice or more | never | threads out of order | longest wait |")
    print("|---|---|---|---|---|---|---|")
    rows = []
    for fault in chosen:
        with tempfile.TemporaryDirectory(prefix="opsbot-faults-") as workdir:
            row = run(fault, Path(workdir))
        rows.append(row)
        print(
            f"| {row.name} | {row.sent} | {row.once} | {row.more} | {row.never} | {row.out_of_order} | "
            f"{row.longest_wait_s:.1f} s |",
            flush=True,
        )
    bad = [r for r in rows if r.once != r.sent or r.out_of_order]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
