"""Figures for `opsbot serve --http` under load (`.venv/bin/python tests/bench/bench_slack.py`).

A script, not a test (pytest does not collect it). Slack gives an app 3 s to acknowledge a request
and shows the person an error when it does not, so acks must stay fast however slow the model is.
This measures that on the real process (`tests/fakes/serve_process.ServeProcess`: click, settings
from the environment, waitress, Bolt's WSGI adapter, signature checks), with a real throwaway
`redis-server`, the fake Slack Web API and a scripted model server whose every reply takes
MODEL_DELAY_S:

1. MENTIONS mentions in as many threads are posted at once (signed, over HTTP): each is queued
   in Redis before its ack (durable intake), then MENTIONS agent runs wait on the slow model.
2. While those runs are in flight, CLIENTS client threads send SLASH_COMMANDS `/ops help` and
   `/ops logs checkout` (alternating) and time each HTTP round trip, i.e. the ack Slack waits for.
   Runs in flight at each send are counted from the model server's side: requests that arrived
   less than MODEL_DELAY_S before it (every reply takes exactly that long). `help` is answered
   in the ack itself; `logs` is queued in Redis and answered at its response_url.
3. Then it waits for every answer and counts answers per thread: each must have exactly one.

A few slash commands are sent first, unmeasured: the first requests pay for imports and
connection set-up once per process, which says nothing about acks under load.
Exit status 1 when the slash-command ack p99 is TARGET_P99_MS or more, the event ack p99
TARGET_EVENT_P99_MS or more, when a thread got no answer or more than one, or when a `logs`
command's response never reached its response_url.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.fakes import slack_payloads as payloads  # noqa: E402
from tests.fakes.model_server import ModelServer, Reply, is_summary_request  # noqa: E402
from tests.fakes.redis_server import RedisServer  # noqa: E402
from tests.fakes.serve_process import ServeProcess  # noqa: E402
from tests.fakes.slack_api import SlackApi  # noqa: E402

MENTIONS = 100
SLASH_COMMANDS = 200
CLIENTS = 8
WARMUP = 4
WORKERS = 128
MODEL_DELAY_S = 2.0
TARGET_P99_MS = 100.0
TARGET_EVENT_P99_MS = 500.0
ANSWER_TIMEOUT_S = 60.0
SETTLE_S = 1.0  # after the last answer, for a duplicate to show up

TOKEN = "xoxb-bench"
SECRET = "bench-signing-secret"
CHANNEL = "CBENCH"
EVENTS = "/slack/events"


class SlowModel:
    """Answers every request after MODEL_DELAY_S, naming the question; notes when each arrived."""

    def __init__(self) -> None:
        self.arrivals: list[float] = []
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.arrivals.append(time.monotonic())
        if is_summary_request(body):
            return Reply(content="summary", delay_s=MODEL_DELAY_S)
        question = next(
            (m["content"] for m in reversed(body["messages"]) if m["role"] == "user" and m.get("content")), ""
        )
        return Reply(content=f"answer to: {question}", delay_s=MODEL_DELAY_S)

    def in_flight(self, at: float) -> int:
        with self._lock:
            return sum(1 for arrived in self.arrivals if at - MODEL_DELAY_S < arrived <= at)


def percentile(values: list[float], p: float) -> float:
    """Nearest rank: the smallest value with at least p% of all values at or below it."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * p // 100))
    return ordered[int(rank) - 1]


def timed(process: ServeProcess, body: str) -> tuple[int, float]:
    headers = payloads.signed_headers(SECRET, body)
    started = time.perf_counter()
    status, _ = process.post(EVENTS, body, headers)
    return status, (time.perf_counter() - started) * 1000


def slash_body(slack: SlackApi, text: str, key: str) -> str:
    return payloads.form_body(payloads.slash_command(text, channel=CHANNEL, response_url=slack.response_url(key)))


def answer_count(slack: SlackApi, thread_ts: str) -> int:
    return sum(
        1 for m in slack.messages(CHANNEL, thread_ts) if (m.get("metadata") or {}).get("event_type") == "opsbot_answer"
    )


def main() -> int:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    model = SlowModel()
    with (
        tempfile.TemporaryDirectory(prefix="opsbot-bench-redis-") as workdir,
        SlackApi(token=TOKEN) as slack,
        ModelServer(model) as model_server,
    ):
        redis_server = RedisServer(Path(workdir))
        redis_server.start()
        env = {
            "SLACK_BOT_TOKEN": TOKEN,
            "SLACK_SIGNING_SECRET": SECRET,
            "SLACK_API_URL": slack.base_url,
            "REDIS_URL": redis_server.url,
            "OPENAI_BASE_URL": model_server.base_url,
            "OPSBOT_MODEL": "scripted",
            "OPSBOT_LLM__MAX_RETRIES": "0",
            "OPSBOT_SLACK__WORKERS": str(WORKERS),
        }
        try:
            with ServeProcess(env) as process:
                return bench(process, slack, model, load)
        finally:
            redis_server.stop()


def bench(process: ServeProcess, slack: SlackApi, model: SlowModel, load: str) -> int:
    for i in range(WARMUP):
        timed(process, slash_body(slack, "help" if i % 2 else "logs checkout", f"warmup-{i}"))

    mentions = [payloads.app_mention(f"<@UBOT> bench question {n}?", channel=CHANNEL) for n in range(MENTIONS)]
    for mention in mentions:  # a message is in Slack before Slack tells opsbot about it
        slack.add_message(CHANNEL, mention["text"], ts=mention["ts"])
    bodies = [json.dumps(payloads.event_callback(m)) for m in mentions]
    started = time.monotonic()
    with ThreadPoolExecutor(MENTIONS) as pool:
        event_acks = list(pool.map(lambda body: timed(process, body), bodies))
    # The runs' first model calls land within milliseconds of the acks; measuring starts once they have.
    deadline = time.monotonic() + MODEL_DELAY_S / 2
    while model.in_flight(time.monotonic()) < MENTIONS and time.monotonic() < deadline:
        time.sleep(0.01)

    per_client = SLASH_COMMANDS // CLIENTS

    def client(c: int) -> list[tuple[int, float, int]]:
        measured = []
        for i in range(per_client):
            n = c * per_client + i
            body = slash_body(slack, "help" if n % 2 else "logs checkout", f"slash-{n}")
            flying = model.in_flight(time.monotonic())
            status, ms = timed(process, body)
            measured.append((status, ms, flying))
        return measured

    with ThreadPoolExecutor(CLIENTS) as pool:
        slash = [m for measured in pool.map(client, range(CLIENTS)) for m in measured]
    sent = len(slash)

    slack.wait_for(lambda: all(answer_count(slack, m["ts"]) for m in mentions), ANSWER_TIMEOUT_S)
    last_answer = time.monotonic()
    queued = [n for n in range(sent) if n % 2 == 0]  # `logs`: answered at the response_url
    slack.wait_for(lambda: all(slack.responses(f"slash-{n}") for n in queued), 10)
    time.sleep(SETTLE_S)
    counts = [answer_count(slack, m["ts"]) for m in mentions]
    responded = sum(1 for n in queued if slack.responses(f"slash-{n}"))

    slash_ms = [ms for _, ms, _ in slash]
    flying = [f for _, _, f in slash]
    event_ms = [ms for _, ms in event_acks]
    bad_status = [s for s, _, _ in slash if s != 200] + [s for s, _ in event_acks if s != 200]
    p99 = percentile(slash_ms, 99)
    event_p99 = percentile(event_ms, 99)

    print("opsbot Slack HTTP bench: `opsbot serve --http` (waitress, Bolt), fake Slack API, real redis-server")
    print(f"(load average before the bench {load} on {os.cpu_count()} CPUs; other load inflates timings)")
    print(f"model: every reply takes {MODEL_DELAY_S:g} s; OPSBOT_SLACK__WORKERS={WORKERS}")
    print(f"\n1. {MENTIONS} mentions in {MENTIONS} threads posted at once")
    print(
        f"   event ack ms: p50 {percentile(event_ms, 50):.1f}  p95 {percentile(event_ms, 95):.1f}  "
        f"p99 {event_p99:.1f}  max {max(event_ms):.1f}"
    )
    print(f"\n2. {sent} slash commands (/ops help, /ops logs checkout) from {CLIENTS} clients during those runs")
    print(
        f"   ack ms: p50 {percentile(slash_ms, 50):.1f}  p95 {percentile(slash_ms, 95):.1f}  "
        f"p99 {p99:.1f}  max {max(slash_ms):.1f}  (mean {statistics.fmean(slash_ms):.1f})"
    )
    print(
        f"   runs in flight at each send (model requests under way): min {min(flying)}  "
        f"median {statistics.median(flying):g}  max {max(flying)}"
    )
    print(f"   `logs` responses delivered to response_url: {responded}/{len(queued)}")
    print(f"\n3. answers per message ({MENTIONS} threads)")
    print(
        f"   0 answers: {counts.count(0)}   exactly 1: {counts.count(1)}   "
        f"more than 1: {sum(1 for c in counts if c > 1)}"
    )
    print(f"   first mention to last answer: {last_answer - started:.2f} s (one model call per run)")
    print(f"\ntotal wall time: {time.monotonic() - started:.2f} s (from the first mention, settling included)")

    failures = []
    if p99 >= TARGET_P99_MS:
        failures.append(f"slash command ack p99 {p99:.1f} ms >= {TARGET_P99_MS:g} ms")
    if event_p99 >= TARGET_EVENT_P99_MS:
        failures.append(f"event ack p99 {event_p99:.1f} ms >= {TARGET_EVENT_P99_MS:g} ms")
    if counts.count(1) != MENTIONS:
        failures.append(f"{MENTIONS - counts.count(1)} message(s) did not get exactly one answer")
    if responded != len(queued):
        failures.append(f"{len(queued) - responded} `logs` command(s) never answered at their response_url")
    if bad_status:
        failures.append(f"{len(bad_status)} request(s) not acked with 200: {sorted(set(bad_status))}")
    if slack.errors:
        failures.append(f"the fake Slack API failed: {slack.errors[0]}")
    verdict = "NOT met" if failures else "met"
    print(
        f"target: slash command ack p99 < {TARGET_P99_MS:g} ms, event ack p99 < {TARGET_EVENT_P99_MS:g} ms, "
        f"exactly one answer per message -> {verdict}"
    )
    for failure in failures:
        print(f"   FAILED: {failure}")
    if failures:
        print(f"\nopsbot's output (last 3000 characters):\n{process.output()[-3000:]}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
