"""Figures for the check of answers against tool results (`python tests/bench/bench_evidence.py`).

A script, not a test. Issue 29, point 6: what the evidence costs.
1. Tokens: the instruction the system prompt adds (bot/agent/tokens.py's estimate, sent with
   every model call) and the step field each result carries (`"step":2,`).
2. Time: `check_answer` on a long answer (40 lines: facts copied from the results, a few
   invented, one contradicted, citations with quotes) over a long thread (30 query_logs-like
   results of 8 KB each); the same with the results read into sources first, none read before
   (a process that did not run the thread's steps), and read again (what the loop does for a
   thread's stored results at each answer: read once, at the step that made them). Goal: under 5 ms.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from opsbot.bot.agent import check_answer, numbered, result_source  # noqa: E402
from opsbot.bot.agent.evidence.sources import read_result  # noqa: E402
from opsbot.bot.agent.prompts import SYSTEM_PROMPT  # noqa: E402
from opsbot.bot.agent.tokens import estimate_tokens  # noqa: E402

RESULTS = 30
RESULT_BYTES = 8 * 1024
ANSWER_LINES = 40
RUNS = 200
GOAL_MS = 5.0
# The system prompt as it was before issue 29 ended here: what follows is the evidence instruction.
BEFORE = "Say plainly when you do not know."
SERVICES = ("checkout", "payments", "auth", "search", "orders")


def log_line(rng: random.Random, n: int) -> str:
    service = rng.choice(SERVICES)
    return (
        f"2026-12-06T09:{n % 60:02d}:{rng.randrange(60):02d}Z {rng.choice(['ERROR', 'WARN ', 'INFO '])} "
        f"{service}-api POST /v1/{service} {rng.choice([200, 502, 503, 504])} "
        f"duration={rng.randrange(5, 3000)}ms upstream={rng.choice(SERVICES)}-{rng.randrange(1, 9)}.internal:8443 "
        f"req-{rng.getrandbits(40):010x} pool_size={rng.randrange(1, 64)}"
    )


def thread(rng: random.Random) -> list[str]:
    """RESULTS rendered results of about RESULT_BYTES each, numbered as the loop numbers them."""
    rendered = []
    for step in range(1, RESULTS + 1):
        lines: list[str] = []
        while sum(len(line) + 1 for line in lines) < RESULT_BYTES - 200:
            lines.append(log_line(rng, len(lines)))
        data = {"service": rng.choice(SERVICES), "summary": f"{len(lines)} matching lines", "lines": "\n".join(lines)}
        rendered.append(numbered(step, json.dumps({"ok": True, "data": data}, separators=(",", ":"))))
    return rendered


def answer(rng: random.Random, rendered: list[str]) -> str:
    """ANSWER_LINES lines: most quote a result's line or state its facts, a few invent or contradict."""
    out = []
    for n in range(ANSWER_LINES):
        step = rng.randrange(RESULTS)
        line = rng.choice(json.loads(rendered[step])["data"]["lines"].splitlines())
        words = line.split()
        if n % 10 == 9:
            out.append(f"- {words[2]} took 4242ms on db-{n}.internal, fixed in v9.9.{n}.")  # invented
        elif n % 10 == 5:
            out.append(f"- The pool_size is 999 there [{step + 1}].")  # contradicted
        elif n % 2:
            out.append(f'- {words[2]} returned {words[5]} after {words[6].split("=")[1]} [{step + 1}: "{line[21:80]}"]')
        else:
            out.append(f"- {words[7].split('=')[1]} answered {words[5]} for {words[8]} [{step + 1}].")
    return "\n".join(out)


def timed(work: object, runs: int = RUNS) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()  # type: ignore[operator]
        times.append((time.perf_counter() - started) * 1000)
    return times


def main() -> None:
    rng = random.Random(29)
    rendered = thread(rng)
    text = answer(rng, rendered)
    sources = [result_source(n, "query_logs", r) for n, r in enumerate(rendered, 1)]
    evidence = check_answer(text, "why are checkout requests failing?", sources)
    checked = timed(lambda: check_answer(text, "why are checkout requests failing?", sources))

    def read_and_check(forget: bool) -> None:
        if forget:
            read_result.cache_clear()
        check_answer(text, "why?", [result_source(n, "query_logs", r) for n, r in enumerate(rendered, 1)])

    read_first = timed(lambda: read_and_check(forget=True), runs=RUNS // 4)
    read_again = timed(lambda: read_and_check(forget=False))

    instruction = SYSTEM_PROMPT.split(BEFORE, 1)[1]
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print("opsbot evidence bench: the check of an answer against a thread's tool results")
    print(f"(load average before the bench {load} on {os.cpu_count()} CPUs)")
    print("\n1. Tokens (bot/agent/tokens.py's estimate: 4 characters a token)")
    print(f"   the instruction in the system prompt: {estimate_tokens(instruction)} tokens, sent with every model call")
    print(
        f"   the step field of a result ('\"step\":12,'): {estimate_tokens(chr(34) + 'step' + chr(34) + ':12,')} tokens"
    )
    print(f"   a question of 3 model calls and 2 results: {3 * estimate_tokens(instruction) + 2 * 3} tokens")
    print(f"\n2. Time: a {ANSWER_LINES}-line answer ({len(text):,} characters) over {RESULTS} results of ~8 KB")
    print(f"   ({sum(len(r) for r in rendered) / 1024:,.0f} KB in all)")
    print(
        f"   found: {len(evidence.citations)} citations, {len(evidence.findings)} facts verified, "
        f"{len(evidence.unsupported)} unsupported, {len(evidence.contradicted)} contradicted"
    )
    rows = (
        ("check_answer (sources read)", checked),
        ("reading the results first (none read before)", read_first),
        ("a later answer of the thread (its results read at its steps)", read_again),
    )
    for label, times in rows:
        ordered = sorted(times)
        p95 = ordered[int(0.95 * (len(ordered) - 1))]
        print(f"   {label}: median {statistics.median(times):.2f} ms, p95 {p95:.2f} ms, min {ordered[0]:.2f} ms")
    verdict = "met" if statistics.median(checked) < GOAL_MS else "NOT met"
    print(f"   goal: under {GOAL_MS:g} ms for the check -> {verdict}")


if __name__ == "__main__":
    main()
