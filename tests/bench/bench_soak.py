"""A long run into one process (`.venv/bin/python tests/bench/bench_soak.py [messages] [threads]`).

A script, not a test. MESSAGES mentions over THREADS threads (each thread's first message opens
it, the rest reply in it) come from SENDERS senders into one `opsbot serve --http`, with a fast
model that calls one tool (`query_logs`) per question and then answers, a real redis-server, and
the fake Slack Web API failing FLAKY_RATE of the calls opsbot makes to post, stream, look and set
statuses (an HTTP 500, as in an incident). Senders keep at most IN_FLIGHT messages unanswered.

Every SAMPLE_EVERY answered messages it prints the process's RSS, Redis's used memory and key
count; at the end, answers per message (each must have exactly one), RSS growth after the warm-up
(the first WARMUP_MESSAGES messages) per message, and Redis keys without a TTL
(everything opsbot keeps for a message must expire). Exit status 1 when a message did not get
exactly one answer, when RSS grew more than RSS_GROWTH_LIMIT_KB a message after the warm-up, or when a
key has no TTL.
"""

from __future__ import annotations

import json
import os
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
from tests.fakes.model_server import Call, ModelServer, Reply, is_summary_request, tool_results  # noqa: E402
from tests.fakes.redis_server import RedisServer  # noqa: E402
from tests.fakes.serve_process import ServeProcess  # noqa: E402
from tests.fakes.slack_api import SlackApi  # noqa: E402

MESSAGES = 10_000
THREADS = 1_000
SENDERS = 8
IN_FLIGHT = 64
FLAKY_RATE = 0.01
SAMPLE_EVERY = 1_000
WARMUP_MESSAGES = 1_000
RSS_GROWTH_LIMIT_KB = 2.0  # per message answered after the warm-up
# How long the senders may take: at least 30 minutes, and 5 messages a second whatever the count.
ANSWER_TIMEOUT_S = 1800.0
MIN_RATE = 5.0
SETTLE_S = 3.0

TOKEN = "xoxb-soak"
SECRET = "soak-signing-secret"
CHANNEL = "CSOAK"
EVENTS = "/slack/events"
FLAKY = (
    "chat.postMessage",
    "chat.update",
    "chat.startStream",
    "chat.appendStream",
    "chat.stopStream",
    "conversations.replies",
    "assistant.threads.setStatus",
)


def one_tool_then_answer(body: dict[str, Any]) -> Reply:
    if is_summary_request(body):
        return Reply(content="summary")
    if not tool_results(body):
        return Reply(calls=[Call("query_logs", {"service": "checkout", "limit": 5})])
    return Reply(content="checkout looks fine")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Counts:
    """Answers per message, from the answer markers the fake Slack holds."""

    def __init__(self, slack: SlackApi) -> None:
        self.slack = slack

    def per_job(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for message in self.slack.messages(CHANNEL):
            metadata = message.get("metadata") or {}
            if metadata.get("event_type") == "opsbot_answer":
                job = str(metadata["event_payload"]["job"])
                counts[job] = counts.get(job, 0) + 1
        return counts


def main(messages: int, threads: int) -> int:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    with (
        tempfile.TemporaryDirectory(prefix="opsbot-soak-") as workdir,
        SlackApi(token=TOKEN) as slack,
        ModelServer(one_tool_then_answer) as model,
    ):
        redis_server = RedisServer(Path(workdir))
        redis_server.start()
        env = {
            "SLACK_BOT_TOKEN": TOKEN,
            "SLACK_SIGNING_SECRET": SECRET,
            "SLACK_API_URL": slack.base_url,
            "REDIS_URL": redis_server.url,
            "OPENAI_BASE_URL": model.base_url,
            "OPSBOT_MODEL": "scripted",
            "OPSBOT_LLM__MAX_RETRIES": "0",
        }
        try:
            with ServeProcess(env) as process:
                for n, method in enumerate(FLAKY):
                    slack.flaky(method, rate=FLAKY_RATE, seed=n, status=500)
                return soak(process, slack, redis_server, messages, threads, load)
        finally:
            redis_server.stop()


def soak(process: ServeProcess, slack: SlackApi, redis_server: RedisServer, total: int, threads: int, load: str) -> int:
    pid = process.process.pid if process.process else 0
    client = redis_server.client()
    roots = [payloads.app_mention(f"<@UBOT> thread {t} opens", channel=CHANNEL) for t in range(threads)]
    plan: list[dict[str, Any]] = list(roots)
    for n in range(total - threads):
        root = roots[n % threads]
        plan.append(payloads.message(f"<@UBOT> and then {n}?", channel=CHANNEL, thread_ts=root["ts"]))
    for message in plan:
        slack.add_message(CHANNEL, message["text"], ts=message["ts"], thread_ts=message.get("thread_ts"))
    counts = Counts(slack)
    answered = threading.Semaphore(IN_FLIGHT)
    sent = [0]
    lock = threading.Lock()

    def sender(offset: int) -> None:
        for message in plan[offset::SENDERS]:
            answered.acquire()
            body = json.dumps(payloads.event_callback(message))
            status = 0
            for attempt in range(4):
                headers = payloads.signed_headers(SECRET, body)
                if attempt:
                    headers |= payloads.retry_headers(attempt)
                status, _ = process.post(EVENTS, body, headers)
                if status == 200:
                    break
            with lock:
                sent[0] += 1

    print("opsbot soak: one `opsbot serve --http`, fake Slack failing", f"{FLAKY_RATE:.0%} of calls, real redis-server")
    print(f"(load average before {load} on {os.cpu_count()} CPUs; {total} messages over {threads} threads,", end=" ")
    print(f"{SENDERS} senders, at most {IN_FLIGHT} unanswered)")
    print("\n| answered | elapsed | RSS MB | Redis used MB | Redis keys |")
    print("|---|---|---|---|---|")
    started = time.monotonic()
    samples: list[tuple[int, float]] = []
    with ThreadPoolExecutor(SENDERS) as pool:
        for offset in range(SENDERS):
            pool.submit(sender, offset)
        done = 0
        next_sample = 0
        deadline = started + max(ANSWER_TIMEOUT_S, total / MIN_RATE)
        while done < total and time.monotonic() < deadline:
            time.sleep(2.0)
            now_done = len(counts.per_job())
            for _ in range(now_done - done):
                answered.release()
            done = now_done
            if done >= next_sample:
                next_sample += SAMPLE_EVERY
                rss = rss_mb(pid)
                samples.append((done, rss))
                memory = client.info("memory")["used_memory"] / 2**20
                print(f"| {done} | {time.monotonic() - started:.0f} s | {rss:.1f} | {memory:.1f} | {client.dbsize()} |")
        for _ in range(IN_FLIGHT + total):
            answered.release()
    time.sleep(SETTLE_S)
    per_job = counts.per_job()
    expected = {f"T1:{CHANNEL}:{m['ts']}" for m in plan}
    once = sum(1 for job in expected if per_job.get(job) == 1)
    never = sum(1 for job in expected if job not in per_job)
    more = sum(1 for job in expected if per_job.get(job, 0) > 1)
    rss_end = rss_mb(pid)
    samples.append((len(per_job), rss_end))
    warm = next(((n, rss) for n, rss in samples if n >= min(WARMUP_MESSAGES, total)), samples[0])
    growth = rss_end - warm[1]
    per_message_kb = growth * 1024 / max(1, len(per_job) - warm[0])
    untimed = [key for key in client.scan_iter(count=1000) if client.ttl(key) == -1]
    elapsed = time.monotonic() - started
    print(f"\nanswers per message: exactly 1: {once}   never: {never}   more than 1: {more}   (of {total})")
    print(f"throughput: {total / elapsed:.1f} messages/s ({elapsed:.0f} s)")
    print(
        f"RSS: {samples[0][1]:.1f} MB at the first sample, {warm[1]:.1f} MB after warm-up ({warm[0]} answered), "
        f"{rss_end:.1f} MB at the end: {growth:+.1f} MB, {per_message_kb:+.2f} KB a message after warm-up"
    )
    print(f"Redis keys without a TTL: {len(untimed)}{' e.g. ' + ', '.join(untimed[:5]) if untimed else ''}")
    failures = []
    if once != total:
        failures.append(f"{total - once} message(s) not answered exactly once")
    if per_message_kb > RSS_GROWTH_LIMIT_KB:
        failures.append(f"RSS grew {per_message_kb:.2f} KB a message after warm-up (limit {RSS_GROWTH_LIMIT_KB:g} KB)")
    if untimed:
        failures.append(f"{len(untimed)} Redis key(s) never expire")
    if slack.errors:
        failures.append(f"the fake Slack API failed: {slack.errors[0]}")
    print(f"verdict: {'NOT met' if failures else 'met'}")
    for failure in failures:
        print(f"   FAILED: {failure}")
    if failures:
        print(f"\nopsbot's output (last 3000 characters):\n{process.output()[-3000:]}")
    return 1 if failures else 0


if __name__ == "__main__":
    arguments = [int(a) for a in sys.argv[1:3]]
    sys.exit(main(*(arguments + [MESSAGES, THREADS][len(arguments) :])))
