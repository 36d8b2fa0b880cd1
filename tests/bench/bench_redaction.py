"""Figures for redaction (`python tests/bench/bench_redaction.py [SIZE_MB]`).

A script, not a test. It writes a log of SIZE_MB (default 100) in a temporary directory: the
bundled sample logs' lines (which mention tokens, passwords and keys without holding any), the
logs bench's request lines, and one line in 500 holding a secret of the corpus
(tests/corpus/secrets.py). Then it prints:
- redaction throughput, MB/s: the whole log in 1 MiB blocks as query_logs reads it (the rules
  that span lines, then the line rules), each half alone, and lines one at a time (µs a line);
- detect-secrets' vendor plugins on the same text, for comparison;
- what the corpora say: kinds hidden and benign lines changed, by opsbot and by detect-secrets;
- the cost per query of filtering redacted text: query_logs on the log with redaction as it is,
  and with the redaction of the scan switched off (what filtering raw text cost), side by side.
"""

from __future__ import annotations

import glob
import json
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from opsbot.config.policy import Policy, Service  # noqa: E402
from opsbot.tools.base import Registry  # noqa: E402
from opsbot.tools.executor import Executor, RetryPolicy, ToolCall  # noqa: E402
from opsbot.tools.logs import query_logs_tool  # noqa: E402
from opsbot.tools.redact import redact_lines, redact_spanning, redact_text  # noqa: E402
from tests.corpus.benign import BENIGN  # noqa: E402
from tests.corpus.detectors import findings  # noqa: E402
from tests.corpus.secrets import KINDS, leaks  # noqa: E402

MIB = 1024 * 1024
REPEAT = 5
QUERIES: list[tuple[str, dict[str, Any]]] = [
    ("last 50 ERROR lines", {"level": "ERROR", "limit": 50}),
    ("last 50 WARN-or-worse lines", {"level": "WARN", "limit": 50}),
    ("contains a request id", {"contains": "req-needle", "limit": 50}),
    ("regex with a literal", {"regex": r"upstream \w+ after \d+ms", "limit": 50}),
    ("regex without a literal", {"regex": r"\d{4,}ms", "limit": 50}),
    ("no filter, last 50", {"limit": 50}),
]


def sample_lines() -> list[str]:
    lines = []
    for path in sorted(glob.glob(str(ROOT / "config" / "sample" / "logs" / "*.log"))):
        lines += [line.split(" ", 1)[1] for line in Path(path).read_text().splitlines() if " " in line]
    return lines


def write_log(path: Path, size_mb: int) -> None:
    rng = random.Random(9)
    bodies = sample_lines()
    bodies += [f"INFO  checkout-api GET /v1/cart/{n:08x} 200 {n % 900}ms request_id=req-{n:08x}" for n in range(2000)]
    secrets = [kind.line for kind in KINDS if "\n" not in kind.line]
    start = datetime(2026, 11, 29, tzinfo=UTC).timestamp()
    written, n = 0, 0
    with open(path, "w", encoding="utf-8", buffering=4 * MIB) as out:
        while written < size_mb * MIB:
            stamp = datetime.fromtimestamp(start + n / 100, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            body = rng.choice(secrets) if n % 500 == 499 else rng.choice(bodies)
            if n % 1000 == 7:
                body = f"ERROR checkout-api upstream timeout after {2000 + n % 7 * 500}ms request_id=req-{n:08x}"
            line = f"{stamp} {body}\n"
            out.write(line)
            written += len(line.encode())
            n += 1
        out.write(f"{stamp} INFO  checkout-api GET /v1/cart 200 request_id=req-needle\n")


def blocks(text: str) -> list[str]:
    out, start = [], 0
    while start < len(text):
        end = text.find("\n", start + MIB)
        end = len(text) if end == -1 else end
        out.append(text[start:end])
        start = end + 1
    return out


def rate(label: str, size: int, work: Any) -> float:
    begun = time.perf_counter()
    work()
    elapsed = time.perf_counter() - begun
    print(f"  {label:<52} {size / MIB / elapsed:7.1f} MB/s")
    return elapsed


def throughput(text: str) -> None:
    size = len(text.encode())
    print(f"redaction of {size / MIB:.0f} MB of log text ({len(text.splitlines()):,} lines), one run each:")
    parts = blocks(text)
    spanned: list[str] = []
    rate("whole (spanning rules, then line rules, 1 MiB blocks)", size, lambda: [redact_text(b) for b in parts])
    rate(
        "spanning rules alone (every block of a scan gets them)",
        size,
        lambda: spanned.extend(map(redact_spanning, parts)),
    )
    rate("line rules alone", size, lambda: [redact_lines(b) for b in spanned])
    lines = text.splitlines()[:200_000]
    begun = time.perf_counter()
    for line in lines:
        redact_lines(line)
    per_line = (time.perf_counter() - begun) / len(lines) * 1e6
    print(f"  {'line rules, one line at a time':<52} {per_line:7.1f} µs a line")
    first = parts[0]
    begun = time.perf_counter()
    findings(first)
    elapsed = time.perf_counter() - begun
    print(f"  {'detect-secrets vendor plugins (1 MiB)':<52} {len(first.encode()) / MIB / elapsed:7.1f} MB/s")


def corpora() -> None:
    hidden = sum(1 for kind in KINDS if not leaks(kind.secret, redact_text(kind.line)))
    caught = sum(1 for kind in KINDS if any(leaks(kind.secret, found) for _, found in findings(kind.line)))
    changed = sum(1 for line, _ in BENIGN if redact_text(line) != line)
    flagged = sum(1 for line, _ in BENIGN if findings(line))
    print(f"corpora ({len(KINDS)} secret kinds, {len(BENIGN)} benign entries):")
    print(f"  opsbot:         {hidden}/{len(KINDS)} kinds hidden, {changed}/{len(BENIGN)} benign entries changed")
    print(
        f"  detect-secrets: {caught}/{len(KINDS)} kinds found by a vendor plugin, "
        f"{flagged}/{len(BENIGN)} benign flagged"
    )


def timed(executor: Executor, args: dict[str, Any]) -> tuple[float, str]:
    times, summary = [], ""
    for _ in range(REPEAT):
        begun = time.perf_counter()
        outcome = executor.run_one(ToolCall("bench", "query_logs", json.dumps({"service": "shop", **args})))
        times.append(time.perf_counter() - begun)
        summary = outcome.result.data["summary"] if outcome.result.ok else str(outcome.result.error)
    return statistics.median(times), summary


def queries(path: Path) -> None:
    policy = Policy(services={"shop": Service(logs=[path], timezone="UTC")})
    executor = Executor(Registry([query_logs_tool(policy)]), RetryPolicy(timeout_s=60, retries=0))
    print(
        f"query_logs on it, median of {REPEAT}: redacted before filtering | raw filtering (redaction off in the scan)"
    )
    for label, args in QUERIES:
        redacted, summary = timed(executor, args)
        with (
            mock.patch("opsbot.tools.logs.scan.redact_spanning", lambda text: text),
            mock.patch("opsbot.tools.logs.match.redact_lines", lambda text: text),
        ):
            raw, _ = timed(executor, args)
        print(f"  {label:<30} {redacted * 1000:7.1f} ms | {raw * 1000:7.1f} ms  | {summary}")


def main() -> None:
    size_mb = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    with tempfile.TemporaryDirectory(prefix="bench-redaction-") as tmp:
        path = Path(tmp) / "shop.log"
        write_log(path, size_mb)
        throughput(path.read_text())
        corpora()
        queries(path)


if __name__ == "__main__":
    main()
