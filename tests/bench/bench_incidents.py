"""Figures for incident memory (`python tests/bench/bench_incidents.py [RECORDS]`).

A script, not a test. It starts a throwaway redis-server, writes RECORDS (default 10,000) incident
records through RedisIncidents as a finished thread writes them (a question, an answer of a few
sentences, the services, some commands, labels), then prints:
- Redis memory per record: MEMORY USAGE summed over every key incident memory uses (records, the
  inverted index, the expiry and update sets), divided by the records; and the keys per record;
- write time per record (the record made, redacted and put: median, p99);
- recall time for QUERIES questions (LexicalRecall over Redis: the index's candidates, rarity,
  BM25 in process): median and p99 (goal: under 20 ms at 10,000 records), and how often a
  question written from a record's own words finds that record first.
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from opsbot.bot.incidents import Asked, CommandRun, IncidentRecord, LexicalRecall, record_id  # noqa: E402
from opsbot.bot.incidents.redis import RedisIncidents  # noqa: E402
from opsbot.bot.redis.client import connect  # noqa: E402
from tests.fakes.redis_server import RedisServer  # noqa: E402

RECORDS = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
QUERIES = 300
SERVICES = [f"svc{i:02d}" for i in range(40)] + ["checkout", "payments", "auth", "inventory", "search"]
SYMPTOMS = (
    "timeout 502 503 latency pool exhausted connection refused disk full oom killed crashloop certificate "
    "expired tls handshake dns resolution deadlock replication lag queue backlog consumer stuck throttled "
    "rate limited 429 memory leak gc pause cpu saturation slow query index missing lock contention "
    "kafka rabbitmq redis postgres mysql elasticsearch cache miss stampede rollout deploy config drift "
    "feature flag token invalid auth failure cron job failed backup snapshot volume inode network partition"
).split()
FILLER = [f"w{i}" for i in range(3000)]  # the long tail of words a thread holds
COMMANDS = ["restart", "disk-usage", "uptime", "memory", "mount-usage", "rollback", "scale-up", "flush-cache"]


def words(rng: random.Random, count: int) -> list[str]:
    """Symptoms common, filler Zipf-like: most threads share a few words, few share rare ones."""
    out = []
    for _ in range(count):
        if rng.random() < 0.4:
            out.append(rng.choice(SYMPTOMS))
        else:
            out.append(FILLER[min(int(rng.paretovariate(1.1)) - 1, len(FILLER) - 1)])
    return out


def record(rng: random.Random, n: int, now: float) -> IncidentRecord:
    services = rng.sample(SERVICES, rng.choice((1, 1, 2)))
    question = " ".join(["why is", services[0], *words(rng, 8), "?"])
    answer = " ".join([services[0].capitalize(), *words(rng, 40)]) + "."
    commands = [
        CommandRun(command=c, status="ok", write=c in ("restart", "rollback"), approved_by="slack:U0424")
        for c in rng.sample(COMMANDS, rng.choice((0, 1, 2)))
    ]
    at = datetime.fromtimestamp(now - rng.uniform(0, 80 * 86400), UTC)
    return IncidentRecord.made(
        id=record_id(f"slack:T1:C{n % 50}:{n}.000100"),
        thread=f"slack:T1:C{n % 50}:{n}.000100",
        channel=f"C{n % 50:08d}",
        link=f"https://slack.com/archives/C{n % 50:08d}/p{n}000100",
        at=at,
        updated=at,
        services=services,
        labels={"alertname": f"{rng.choice(SYMPTOMS).capitalize()}High", "severity": "page"},
        questions=[Asked(at=at, who="slack:U0424", text=question)],
        findings=[answer],
        cause=answer.split(".")[0],
        commands=commands,
        outcome="answered",
        expires_at=now + 90 * 86400,
    )


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> None:
    rng = random.Random(32)
    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(Path(tmp))
        server.start()
        try:
            client = connect(server.url)
            store = RedisIncidents(client)
            now = time.time()
            kept: list[IncidentRecord] = []
            writes = []
            for n in range(RECORDS):
                started = time.perf_counter()
                made = record(rng, n, now)
                store.put(made)
                writes.append((time.perf_counter() - started) * 1000)
                kept.append(made)
            keys = store.keys()
            pipe = client.pipeline(transaction=False)
            for key in keys:
                pipe.memory_usage(key, samples=0)
            total = sum(size or 0 for size in pipe.execute())
            used = client.info("memory")["used_memory"]
            recall = LexicalRecall(store, min_score=0.45, max_shown=3)
            times, first, top3 = [], 0, 0
            for _ in range(QUERIES):
                target = rng.choice(kept)
                asked = " ".join([*target.services, *rng.sample(target.questions[0].text.split(), 5)])
                started = time.perf_counter()
                found = recall.recall(asked, lambda _: True)
                times.append((time.perf_counter() - started) * 1000)
                ranked = [m.record.id for m in found.matches]
                first += ranked[:1] == [target.id]
                top3 += target.id in ranked[:3]
        finally:
            server.stop()
    print(f"incident records: {RECORDS:,}, Redis keys: {len(keys):,} ({len(keys) / RECORDS:.1f} a record)")
    print(f"Redis memory per record (MEMORY USAGE over every key, index included): {total / RECORDS:,.0f} B")
    print(f"Redis used_memory after the writes: {used / 1024 / 1024:.1f} MiB")
    print(
        f"write (made, redacted, put): median {statistics.median(writes):.2f} ms, p99 {percentile(writes, 0.99):.2f} ms"
    )
    print(
        f"recall over {QUERIES} questions: median {statistics.median(times):.2f} ms, "
        f"p99 {percentile(times, 0.99):.2f} ms, max {max(times):.2f} ms (goal: < 20 ms)"
    )
    print(f"the record a question was written from, found first: {first}/{QUERIES}, in the first three: {top3}")


if __name__ == "__main__":
    main()
