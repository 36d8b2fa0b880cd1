"""Needles are found (issue 14, part 4): with no since/until, a contains or regex search reads a
plain file in raw chunks, looks for its prefilter word at C speed, and judges only the lines
around what it finds, redacted, so a needle anywhere in a file of up to NEEDLE_SCAN_BYTES is
found and counted, and one that only a secret spells is not.

The 300 MB file is the only large thing here (written once, in about a second, and deleted); the
1 GiB figures are the bench's (tests/bench/bench_logs.py). Tokens are assembled at run time so
this file holds no complete one; every value is made up.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import opsbot.tools.logs.files as log_files
import opsbot.tools.logs.query as log_query
import opsbot.tools.logs.scan as log_scan
from opsbot.config.policy import Policy, Service
from opsbot.tools.base import Registry
from opsbot.tools.executor import Executor, RetryPolicy, ToolCall
from opsbot.tools.logs import query_logs_tool

FAST = RetryPolicy(timeout_s=30, retries=0, backoff_s=0.01)
MB = 1024 * 1024
AWS_ID = "AKIA" + "IOSFODNN7EXAMPLE"
TOKEN = "ghp_" + "KRidQZhUsBZc3QaMhf5b27qL37t0kqgC3SVT"
LINE = "2026-11-30T17:53:{s:02d}.000Z INFO  checkout-api GET /v1/cart/{n:08x} 200 {ms:3d}ms request_id=req-{n:08x}\n"


def shop(*logs: Path) -> Executor:
    policy = Policy(services={"shop": Service(logs=list(logs), timezone="UTC")})
    return Executor(Registry([query_logs_tool(policy)]), FAST)


def query(executor: Executor, **args: Any) -> dict[str, Any]:
    outcome = executor.run_one(ToolCall("needles", "query_logs", json.dumps({"service": "shop", **args})))
    assert outcome.result.ok, outcome.result
    data: dict[str, Any] = outcome.result.data
    return data


def filler(size: int) -> bytes:
    """About `size` bytes of ordinary request lines: one MiB of them, repeated."""
    block = "".join(LINE.format(s=n % 60, n=n, ms=n % 900 + 12) for n in range(9_000)).encode()
    return block * (size // len(block) + 1)


@pytest.fixture
def searches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of each file the needle search read (the block path never calls raw_backwards)."""
    seen: list[int] = []
    real = log_files.raw_backwards

    def spy(handle: Any, end: int, budget: int, f: Any) -> Iterator[log_files.Chunk]:
        seen.append(end)
        return real(handle, end, budget, f)

    monkeypatch.setattr(log_scan, "raw_backwards", spy)
    return seen


@pytest.fixture(scope="module")
def big_log(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """300 MB: a needle and a secret in its first lines, the slow path's 256 MiB cap short of them."""
    path = tmp_path_factory.mktemp("needles") / "checkout.log"
    with open(path, "wb") as out:
        out.write(b"2026-11-29T20:00:00.000Z INFO  checkout-api GET /v1/cart 200 request_id=req-needle-old\n")
        out.write(f"2026-11-29T20:00:01.000Z ERROR checkout-api s3 denied for {AWS_ID} bucket=receipts\n".encode())
        out.write(f"2026-11-29T20:00:02.000Z WARN  checkout-api github push token={TOKEN}\n".encode())
        chunk = filler(MB)
        for _ in range(300):
            out.write(chunk[: 1000 * 1000])  # whole lines are not needed: the cut one is ordinary text
        out.write(b"\n")
    yield path
    path.unlink()


# ---------------------------------------------------------------- found, and counted exactly


def test_a_needle_at_the_very_start_of_a_300_mb_file_is_found_and_counted(big_log: Path, searches: list[int]) -> None:
    size = big_log.stat().st_size
    assert size > log_scan.MAX_SCAN_BYTES  # the block path would stop short of it
    data = query(shop(big_log), contains="REQ-NEEDLE-OLD")
    assert data["matches"] == 1 and data["complete"] is True, data["summary"]
    assert data["lines"].endswith("request_id=req-needle-old")
    assert data["summary"] == f"1 matching line (newest last); read {log_scan.mb(size)} of 1 file"
    assert searches == [size]


def test_a_regex_with_a_required_literal_takes_the_needle_search(big_log: Path, searches: list[int]) -> None:
    data = query(shop(big_log), regex=r"request_id=req-needle-\w+$")
    assert data["matches"] == 1 and data["complete"] is True and data["lines"].endswith("req-needle-old")
    assert query(shop(big_log), regex=r"(?i)REQUEST_ID=REQ-NEEDLE-O\w+")["matches"] == 1
    assert len(searches) == 2


def test_a_needle_only_a_secret_spells_is_not_found_even_by_the_needle_search(
    big_log: Path, searches: list[int]
) -> None:
    """The raw file holds these words; the redacted lines do not, and only those are judged."""
    with big_log.open("rb") as raw:
        head = raw.read(4096)
    assert AWS_ID.encode() in head and TOKEN.encode() in head
    executor = shop(big_log)
    queries: list[dict[str, Any]] = [
        {"contains": AWS_ID},
        {"contains": AWS_ID[6:14].lower()},
        {"regex": AWS_ID[:10] + r"\w+"},
        {"regex": r"AKIA[0-9A-Z]{16}"},
        {"contains": TOKEN[4:20]},
        {"regex": r"token=ghp_K\w+"},
    ]
    for args in queries:
        data = query(executor, **args)
        assert data["matches"] == 0 and data["summary"].startswith("no matching lines"), (args, data["summary"])
        assert data["complete"] is True
    # The lines themselves are found by what redaction leaves, and shown redacted.
    data = query(executor, contains="bucket=receipts")
    assert data["matches"] == 1 and AWS_ID not in data["lines"] and "[REDACTED:aws]" in data["lines"]
    assert len(searches) == len(queries) + 1


# ---------------------------------------------------------------- the same answers as the block path


WORDS = [
    "GET", "/v1/cart/0042", "req-00ab", "Req-00AB", "REQ-00AB-9", "timeout", "TimeOut", "upstream", "503", "200",
    "user=u-17", "key", "Key", "KEY", "\u212aey", "x\u0130d", "xid", "na\u00efve", "\u00fcber", "pool=7", "",
    f"token={TOKEN}", "password=Wint3r-is-c0ming", f"{AWS_ID} 5MP2rdfqr6R7wIH3qS3205ZxauEKa4Ca9+3r4cXe",
    "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1LTcwIn0.c2lnbmF0dXJl", "AKIA", "ghp_", "REDACTED",
]  # fmt: skip
LEVELS = ["INFO ", "WARN ", "ERROR", "DEBUG", "error", "info "]


@st.composite
def logs_and_queries(draw: st.DrawFn) -> tuple[list[str], dict[str, Any]]:
    lines = []
    for n in range(draw(st.integers(min_value=1, max_value=80))):
        words = draw(st.lists(st.sampled_from(WORDS), min_size=0, max_size=5))
        level = draw(st.sampled_from(LEVELS))
        lines.append(f"2026-11-29T03:{n // 60:02d}:{n % 60:02d}Z {level} shop {' '.join(words)}".rstrip())
    source = draw(st.sampled_from([*WORDS, *lines]))
    start = draw(st.integers(min_value=0, max_value=max(0, len(source) - 3)))
    needle = source[start : start + draw(st.integers(min_value=3, max_value=24))] or "shop"
    if draw(st.booleans()):
        needle = "".join(c.upper() if draw(st.booleans()) else c for c in needle)
    kind = draw(st.sampled_from(["contains", "regex", "regex-i", "contains+level", "regex+tail"]))
    args: dict[str, Any] = {"limit": draw(st.sampled_from([1, 3, 50]))}
    if kind.startswith("contains"):
        args["contains"] = needle
    else:
        flags = "(?i)" if kind == "regex-i" else ""
        tail = r"\s*\S*" if kind == "regex+tail" else ""
        args["regex"] = flags + re.escape(needle) + tail
    if kind.endswith("level"):
        args["level"] = "WARN"
    return lines, args


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=logs_and_queries(), block=st.sampled_from([128, 512, MB]), chunk=st.sampled_from([97, 700, 16 * MB]))
def test_the_needle_search_gives_the_answers_of_the_block_path(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    case: tuple[list[str], dict[str, Any]],
    block: int,
    chunk: int,
) -> None:
    """Any file, any needle, any block and chunk edges: the same matches, lines, counts and
    summary, whether lines are found by the raw search or block by block."""
    lines, args = case
    path = tmp_path_factory.mktemp("same") / "shop.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with monkeypatch.context() as patched:
        patched.setattr(log_files, "BLOCK_BYTES", block)
        patched.setattr(log_scan, "BLOCK_BYTES", block)
        patched.setattr(log_files, "CHUNK_BYTES", chunk)
        executor = shop(path)
        fast = query(executor, **args)
        patched.setattr(log_scan, "needle_for", lambda f: None)  # every query down the block path
        slow = query(executor, **args)
    assert fast == slow, args


def test_a_needle_across_the_middle_of_a_chunk_is_found(tmp_path: Path, searches: list[int]) -> None:
    """A chunk of a megabyte or more is searched in two halves at once: the first reaches past
    the middle by the word's length less one."""
    size = 2 * MB  # one chunk: its middle is at (size - 1) // 2
    head = b"a" * 99 + b"\n"
    line = b"z" * 70 + b"req-straddle end\n"
    before = head * (((size - 1) // 2 - 5 - 70) // 100)
    assert len(before) + 70 == (size - 1) // 2 - 5  # the needle starts 5 bytes before the middle
    rest = size - len(before) - len(line)
    path = tmp_path / "shop.log"
    path.write_bytes(before + line + head * (rest // 100) + b"b" * (rest % 100 - 1) + b"\n")
    assert path.stat().st_size == size
    assert query(shop(path), contains="REQ-STRADDLE")["matches"] == 1
    assert query(shop(path), regex=r"req-straddle\b")["matches"] == 1
    assert len(searches) == 2


def test_a_kelvin_sign_or_dotted_capital_i_is_found_as_the_block_path_finds_it(
    tmp_path: Path, searches: list[int]
) -> None:
    """str.lower() turns them into ASCII letters, which a raw ASCII-folding search cannot see:
    a chunk holding one is judged whole."""
    path = tmp_path / "shop.log"
    lines = ["2026-11-29T03:00:00Z INFO  shop rotated the \u212aey", "2026-11-29T03:00:01Z INFO  shop ta\u0130d 1"]
    path.write_text("\n".join(lines * 3) + "\n", encoding="utf-8")
    assert query(shop(path), contains="the key")["matches"] == 3
    assert query(shop(path), contains="tai")["matches"] == 3
    assert len(searches) == 2


def test_the_table_of_characters_lowered_into_ascii_is_all_of_them() -> None:
    found = set()
    for code in range(128, sys.maxunicode + 1):
        if 0xD800 <= code <= 0xDFFF:
            continue
        letters = "".join(x for x in chr(code).lower() if x.isascii())
        if letters:
            found.add((letters, chr(code).encode()))
    assert found == set(log_scan.FOLDS_INTO_ASCII)


KEY_BODY = [
    "MIIEowIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi6D8WnOcQ1Lq1N5xQpHnY2zT7b",
    "Xk4yPq9wR2sV8mN1cL6fJ3hG0dA5eB7tU9iO4pK2jM8nQ1rS6vW3xY0zC5bF7gH1",
    "Zq8Lm3Nw7Rt2Yv5Bx9Kc4Hf1Jd6Gs0Ap3Ue8Ti2Oy7Wr5Qm1Ln9Xk4Zb6Vc2Mh7",
    "Qk2rT9sV4wX7yZ1aB3cD5eF8gH0iJ2kL4mN6oP8qR0sT2uV4wX6yZ8aB0cD2e==",
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    before=st.integers(min_value=0, max_value=60),
    block=st.sampled_from([256, 1024]),
    chunk=st.sampled_from([300, 1000, 4096]),
)
def test_a_private_key_across_a_chunk_edge_is_not_found_by_its_body(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, before: int, block: int, chunk: int
) -> None:
    """The stretches around a match are cut at chunk edges as blocks are at block edges: the
    rules that span lines still hide every line of the key."""
    lines = [f"2026-11-29T03:00:{n % 60:02d}Z INFO  shop filler line {n:03d}" for n in range(before)]
    key = ["-----BEGIN OPENSSH PRIVATE KEY-----", *KEY_BODY, "-----END OPENSSH PRIVATE KEY-----"]
    after = [f"2026-11-29T03:01:{n:02d}Z INFO  shop after {n:02d}" for n in range(12)]
    path = tmp_path_factory.mktemp("key") / "shop.log"
    path.write_text("\n".join([*lines, *key, *after]) + "\n")
    with monkeypatch.context() as patched:
        patched.setattr(log_files, "BLOCK_BYTES", block)
        patched.setattr(log_files, "CHUNK_BYTES", chunk)
        executor = shop(path)
        for body in KEY_BODY:
            for args in ({"contains": body[5:15]}, {"regex": re.escape(body[20:32]) + r"\w*"}):
                data = query(executor, **args)
                assert data["matches"] == 0, (before, block, chunk, args, data["lines"])


# ---------------------------------------------------------------- caps, and what they say


def numbered(count: int, needle_at: int | None = None) -> str:
    """`count` request lines of 78 bytes, one of them ending in "needle"."""
    lines = [
        f"2026-11-29T03:00:{n % 60:02d}Z INFO  shop GET /v1/cart/{n:06d} 200 request_id=req-{n:06x}"
        for n in range(count)
    ]
    if needle_at is not None:
        lines[needle_at] += " needle"
    return "\n".join(lines) + "\n"


def written(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_the_needle_cap_holds_above_it_and_says_how_far_the_search_got(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, searches: list[int]
) -> None:
    monkeypatch.setattr(log_scan, "NEEDLE_SCAN_BYTES", 64 * 1024)
    monkeypatch.setattr(log_files, "CHUNK_BYTES", 16 * 1024)
    path = written(tmp_path / "shop.log", numbered(3000, needle_at=0))  # 234 KB
    older = written(tmp_path / "shop.log.1", numbered(1000, needle_at=500))
    os.utime(older, (time.time() - 60, time.time() - 60))
    data = query(shop(path), contains="needle")
    assert data["matches"] == 0 and data["complete"] is False
    total = log_scan.mb(path.stat().st_size + older.stat().st_size)
    assert data["summary"] == (
        "no matching lines; read 64 KB of 1 file; the scan stopped early because it searched its cap of 64 KB, "
        f"the newest 64 KB of {total}: narrow with since/until to count further"
    )
    assert searches == [path.stat().st_size]
    # Within the cap, a needle is found however far back: here about 55 KB (the rest is not counted).
    near = written(tmp_path / "near.log", numbered(3000, needle_at=3000 - 700))
    data = query(shop(near), contains="needle")
    assert data["matches"] == 1 and data["summary"].startswith("at least 1 matching line"), data["summary"]


def test_the_time_cap_still_ends_a_needle_search_and_says_how_far_it_got(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for module in (log_query, log_scan):
        monkeypatch.setattr(module, "SCAN_SECONDS", 0.5)
    monkeypatch.setattr(log_files, "CHUNK_BYTES", 16 * 1024)
    real = log_files.raw_backwards

    def slow_disk(handle: Any, end: int, budget: int, f: Any) -> Iterator[log_files.Chunk]:
        for chunk in real(handle, end, budget, f):
            yield chunk
            time.sleep(0.6)  # the deadline passes after the first chunk

    monkeypatch.setattr(log_scan, "raw_backwards", slow_disk)
    path = written(tmp_path / "shop.log", numbered(3000, needle_at=0))
    data = query(shop(path), contains="needle")
    assert data["complete"] is False and data["matches"] == 0
    assert "because it ran for its cap of 0.5 s, having searched the newest 16 KB of 0.2 MB" in data["summary"]


def test_gz_files_keep_their_path(tmp_path: Path, searches: list[int]) -> None:
    plain = written(tmp_path / "app.log", numbered(10))
    with gzip.open(tmp_path / "app.log.1.gz", "wt") as out:
        out.write(numbered(100, needle_at=3))
    os.utime(tmp_path / "app.log.1.gz", (time.time() - 60, time.time() - 60))
    data = query(shop(plain), contains="needle")
    assert data["matches"] == 1 and len(data["files"]) == 2
    assert searches == [plain.stat().st_size]


def test_since_or_until_keeps_the_block_path(tmp_path: Path, searches: list[int]) -> None:
    path = written(tmp_path / "shop.log", numbered(100, needle_at=3))
    assert query(shop(path), contains="needle", until="2030-01-01T00:00:00Z")["matches"] == 1
    assert query(shop(path), contains="needle", since="2020-01-01T00:00:00Z")["matches"] == 1
    assert searches == []
