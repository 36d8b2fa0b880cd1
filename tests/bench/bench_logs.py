"""Figures for query_logs on a 1 GiB log (`python tests/bench/bench_logs.py [SIZE_MB]`).

A script, not a test (pytest does not collect it). It writes a log of at most SIZE_MB MiB
(default 1024: just under 1 GiB, the needle search's cap) in a temporary directory, spanning the
24 hours up to now, about 113 bytes a line:
- INFO lines, a WARN every 100 lines;
- an ERROR every 2 minutes throughout (1 in ~13,000 lines, ~1.4 MB apart), and one every 10 s
  in the last 5 minutes: the last 50 ERRORs reach ~30 MB back; each ERROR with the 12-line Java
  stack trace below it (frames and a `Caused by:`), which queries return with it as one entry;
- request ids to look for: `req-needle-old` in the first minute (the start of the file),
  `req-needle-mid` at 12 h (the middle), `req-needle-new` a minute before the end; and
  `req-needle-none`, which no line holds.
Then it runs queries through the real executor (validation, the tool, redaction), each REPEAT
times, and prints the median and the slowest; the first query also once with the file evicted
from the page cache (posix_fadvise DONTNEED), i.e. read from disk. A 64 MB rotated .gz is timed
too. The needles are then looked for by opsbot beside `grep -F -i -m1`, `grep -F -i -c` and
`tac FILE | grep -F -i -m1` on the same file, medians of REPEAT runs each, also once from disk.
Everything is deleted at the end.
"""

from __future__ import annotations

import gzip
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from opsbot.config.policy import Policy, Service  # noqa: E402
from opsbot.tools.base import Registry  # noqa: E402
from opsbot.tools.executor import Executor, RetryPolicy, ToolCall  # noqa: E402
from opsbot.tools.logs import query_logs_tool  # noqa: E402

REPEAT = 5
TARGET_S = 1.0
GREP_RATIO = 1.5  # issue 14: a needle is found within 1.5 times the time of `grep -F -i -c`
SPAN_S = 24 * 3600
LINE = "{ts} INFO  checkout-api GET /v1/cart/{n:08x} 200 {ms:3d}ms request_id=req-{n:08x} user=u-{u:05d}\n"
ERROR = '{ts} ERROR checkout-api POST /v1/checkout 502 error="upstream timeout after {ms}ms" request_id=req-{n:08x}\n'
WARN = "{ts} WARN  checkout-api slow response from inventory {ms:4d}ms request_id=req-{n:08x} retry=1 pool=7\n"
TRACE = (
    "java.util.concurrent.TimeoutException: upstream timeout\n"
    "\tat com.shop.checkout.PaymentClient.charge(PaymentClient.java:118)\n"
    "\tat com.shop.checkout.CheckoutService.pay(CheckoutService.java:74)\n"
    "\tat com.shop.checkout.CheckoutController.post(CheckoutController.java:51)\n"
    "\tat org.springframework.web.servlet.FrameworkServlet.service(FrameworkServlet.java:897)\n"
    "\tat jakarta.servlet.http.HttpServlet.service(HttpServlet.java:658)\n"
    "Caused by: java.net.SocketTimeoutException: Read timed out\n"
    "\tat java.base/sun.nio.ch.NioSocketImpl.timedRead(NioSocketImpl.java:288)\n"
    "\tat java.base/sun.nio.ch.NioSocketImpl.implRead(NioSocketImpl.java:314)\n"
    "\tat java.base/java.net.Socket$SocketInputStream.read(Socket.java:1099)\n"
    "\tat com.shop.checkout.PaymentClient.charge(PaymentClient.java:112)\n"
    "\t... 4 more\n"
)

QUERIES: list[tuple[str, dict[str, Any]]] = [
    ("last 50 ERROR lines", {"level": "ERROR", "limit": 50}),
    ("last 50 ERROR lines matching regex", {"level": "ERROR", "regex": r"timeout after \d{4,}ms", "limit": 50}),
    ("regex alone, last 50", {"regex": r"error=\"upstream \w+ after 2\d{3}ms\"", "limit": 50}),
    ("since=15m, last 50 lines", {"since": "15m", "limit": 50}),
    ("since=15m level=WARN, last 50", {"since": "15m", "level": "WARN", "limit": 50}),
    ("until=12h level=ERROR (bisected)", {"until": "12h", "level": "ERROR", "limit": 50}),
    ("contains a request id 1 min old", {"contains": "req-needle-new", "limit": 50}),
    ("contains a request id 24 h old (the start)", {"contains": "req-needle-old", "limit": 50}),
    ("contains a trace's root cause, last 50", {"contains": "SocketTimeoutException", "limit": 50}),
]
NEEDLES = [
    ("at the start", "req-needle-old"),
    ("in the middle", "req-needle-mid"),
    ("at the end", "req-needle-new"),
    ("absent", "req-needle-none"),
]


def stamp(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def second_of_lines(epoch: float, first: int, count: int) -> str:
    ts = stamp(epoch)
    lines = []
    for i in range(count):
        n = first + i
        template = WARN if n % 100 == 0 else LINE
        lines.append(template.format(ts=ts, n=n, ms=n % 900 + 12, u=n % 99_991))
    return "".join(lines)


def write_log(path: Path, size_mb: int, end: float) -> int:
    """The log described above; returns its number of ERROR lines."""
    line_bytes = len(second_of_lines(end, 0, 1000)) / 1000  # lines are of fixed widths
    per_second = max(1, int(size_mb * 1024 * 1024 / line_bytes) // SPAN_S)
    start, errors, n = end - SPAN_S, 0, 0
    with open(path, "w", encoding="utf-8", buffering=4 * 1024 * 1024) as out:
        for second in range(SPAN_S):
            epoch = start + second
            text = second_of_lines(epoch, n, per_second)
            n += per_second
            recent = second >= SPAN_S - 300
            if second % 120 == 0 or (recent and second % 10 == 0):
                text += ERROR.format(ts=stamp(epoch), ms=2000 + second % 7 * 500, n=n) + TRACE
                errors += 1
            if second == 30:
                text += f"{stamp(epoch)} INFO  checkout-api GET /v1/cart 200 request_id=req-needle-old\n"
            if second == SPAN_S // 2:
                text += f"{stamp(epoch)} INFO  checkout-api GET /v1/cart 200 request_id=req-needle-mid\n"
            if second == SPAN_S - 60:
                text += f"{stamp(epoch)} INFO  checkout-api GET /v1/cart 200 request_id=req-needle-new\n"
            out.write(text)
    return errors


def write_gz(directory: Path, end: float) -> Path:
    """app.log (1 MB, no errors) and app.log.1.gz (64 MB uncompressed, errors throughout)."""
    plain, rotated = directory / "app.log", directory / "app.log.1.gz"
    with gzip.open(rotated, "wt", encoding="utf-8", compresslevel=6) as out:
        n, second = 0, 0
        while out.tell() < 64 * 1024 * 1024:
            out.write(second_of_lines(end - 7200 + second, n, 40))
            if second % 60 == 0:
                out.write(ERROR.format(ts=stamp(end - 7200 + second), ms=2500, n=n) + TRACE)
            n, second = n + 40, second + 1
    plain.write_text(second_of_lines(end - 10, 10**7, 9000))
    os.utime(rotated, (end - 3600, end - 3600))
    return plain


def evict(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def timed(executor: Executor, args: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    begun = time.perf_counter()
    outcome = executor.run_one(ToolCall("bench", "query_logs", json.dumps({"service": "shop", **args})))
    elapsed = time.perf_counter() - begun
    assert outcome.result.ok, outcome.result
    data: dict[str, Any] = outcome.result.data
    return elapsed, data


def executor_for(path: Path) -> Executor:
    policy = Policy(services={"shop": Service(logs=[path], timezone="UTC")})
    return Executor(Registry([query_logs_tool(policy)]), RetryPolicy(timeout_s=60, retries=0))


def report(label: str, executor: Executor, args: dict[str, Any]) -> float:
    times: list[float] = []
    data: dict[str, Any] = {}
    for _ in range(REPEAT):
        elapsed, data = timed(executor, args)
        times.append(elapsed)
    median = statistics.median(times)
    print(f"  {label:<44} median {median * 1000:7.1f} ms  max {max(times) * 1000:7.1f} ms  | {data['summary']}")
    return median


def shell_time(command: str) -> float:
    # Output to a pipe, not /dev/null: GNU grep stops at the first match when it writes to
    # /dev/null, which would make `grep -c` a `grep -q`.
    begun = time.perf_counter()
    subprocess.run(command, shell=True, capture_output=True, check=False)
    return time.perf_counter() - begun


def seconds(executor: Executor, args: dict[str, Any]) -> float:
    return timed(executor, args)[0]


def median_of(run: Callable[[], float]) -> float:
    return statistics.median(run() for _ in range(REPEAT))


def needles(executor: Executor, path: Path) -> bool:
    """opsbot beside grep for each needle; True if every needle is found within GREP_RATIO of
    `grep -F -i -c` (the reference that reads the whole file, as a search from the end must)."""
    size, file = path.stat().st_size, shlex.quote(str(path))
    print(f"needles in {path.name} ({size / 1024**3:.2f} GiB), median of {REPEAT}; ratio = opsbot / grep -F -i -c:")
    header = f"  {'needle':<14} {'opsbot':>9} {'MB/s':>6} {'grep -m1':>9} {'grep -c':>9} {'tac|grep':>9} {'ratio':>6}"
    print(header + "  | opsbot's summary")
    reached = True
    for label, needle in NEEDLES:
        args = {"contains": needle, "limit": 50}
        mine = median_of(partial(seconds, executor, args))
        _, data = timed(executor, args)
        first = median_of(partial(shell_time, f"grep -F -i -m1 {needle} {file}"))
        count = median_of(partial(shell_time, f"grep -F -i -c {needle} {file}"))
        backward = median_of(partial(shell_time, f"tac {file} | grep -F -i -m1 {needle}"))
        expected = 0 if label == "absent" else 1
        found = data["matches"] == expected and data["complete"]
        reached &= found and mine <= GREP_RATIO * count
        rate = f"{size / 1024**2 / mine:6.0f}" if data["complete"] else "capped"  # not the whole file read
        print(
            f"  {label:<14} {mine * 1000:6.0f} ms {rate} {first * 1000:6.0f} ms "
            f"{count * 1000:6.0f} ms {backward * 1000:6.0f} ms {mine / count:5.2f}x  | {data['summary']}"
        )
    regex_args = {"regex": r"request_id=req-needle-o\w+", "limit": 50}
    mine = median_of(partial(seconds, executor, regex_args))
    _, data = timed(executor, regex_args)
    rate = f"{size / 1024**2 / mine:6.0f}" if data["complete"] else "capped"
    print(f"  {'regex, start':<14} {mine * 1000:6.0f} ms {rate}  | {regex_args['regex']}: {data['summary']}")
    evict(path)
    cold, data = timed(executor, {"contains": NEEDLES[0][1], "limit": 50})
    evict(path)
    grep_cold = shell_time(f"grep -F -i -c {NEEDLES[0][1]} {file}")
    evict(path)
    tac_cold = shell_time(f"tac {file} | grep -F -i -m1 {NEEDLES[0][1]}")
    print(
        f"  from disk, at the start: opsbot {cold * 1000:.0f} ms, grep -F -i -c {grep_cold * 1000:.0f} ms, "
        f"tac | grep -F -i -m1 {tac_cold * 1000:.0f} ms  | {data['summary']}"
    )
    return reached


def main() -> None:
    size_mb = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    end = time.time()
    with tempfile.TemporaryDirectory(prefix="bench-logs-") as tmp:
        path = Path(tmp) / "checkout.log"
        begun = time.perf_counter()
        errors = write_log(path, size_mb, end)
        size = path.stat().st_size
        print(f"query_logs on {path.name}: {size / 1024**3:.2f} GiB, {errors} ERROR lines, spanning 24 h")
        print(f"  (written in {time.perf_counter() - begun:.0f} s; {os.cpu_count()} CPUs; {REPEAT} runs per query)")
        executor = executor_for(path)

        evict(path)
        cold, data = timed(executor, QUERIES[0][1])
        label = "last 50 ERROR lines, from disk (cache evicted)"
        print(f"  {label:<44} once   {cold * 1000:7.1f} ms  | {data['summary']}")
        first = report(QUERIES[0][0], executor, QUERIES[0][1])
        for label, args in QUERIES[1:]:
            report(label, executor, args)

        gz_dir = Path(tmp) / "rotated"
        gz_dir.mkdir()
        plain = write_gz(gz_dir, end)
        packed = (gz_dir / "app.log.1.gz").stat().st_size / 1024**2
        print(f"rotated: app.log 1 MB + app.log.1.gz {packed:.0f} MB (64 MB uncompressed)")
        report("last 50 ERROR lines (all in the .gz)", executor_for(plain), {"level": "ERROR", "limit": 50})

        found = needles(executor, path)

        verdict = "reached" if first < TARGET_S else "NOT reached"
        print(f"target: last 50 ERROR lines of a 1 GB log in well under {TARGET_S:g} s: {verdict}", end=" ")
        print(f"(median {first * 1000:.0f} ms, from disk {cold * 1000:.0f} ms)")
        verdict = "reached" if found else "NOT reached"
        print(f"target: every needle found and counted, within {GREP_RATIO:g}x of grep -F -i -c: {verdict}")


if __name__ == "__main__":
    main()
