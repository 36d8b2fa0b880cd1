"""REDIS_URL as an operator writes it: every form opsbot connects with, and for each mistake a
message naming REDIS_URL and what to write instead, the same from `Settings`, `opsbot
check-config`, `opsbot serve` and the terminal, never a traceback and never a silent default."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from opsbot.bot.redis.client import describe
from opsbot.config.redis_url import RedisTarget, parse_redis_url
from opsbot.config.settings import SAMPLE_CONFIG, Settings

MALFORMED = [
    ("localhost:6379", "REDIS_URL must look like redis://host:6379/0 (or rediss://"),
    ("http://cache:6379/0", "REDIS_URL must look like redis://host:6379/0"),
    ("REDIS://cache:6379/0", "REDIS_URL must look like"),
    ("redis://cache:70000/0", "REDIS_URL has port '70000'; write a port from 1 to 65535"),
    ("redis://cache:0/0", "REDIS_URL has port '0'; write a port from 1 to 65535"),
    ("redis://cache:6379x/0", "REDIS_URL has port '6379x'"),
    ("redis://cache:6379/zero", "REDIS_URL ends in '/zero', which is not a database number; end it with the number"),
    ("redis://cache:6379/0/1", "which is not a database number"),
    ("redis://:6379/0", "REDIS_URL names no host; write the server's host name after //"),
    ("redis://", "REDIS_URL names no host"),
    ("unix://", "REDIS_URL names no socket; write the socket's path after unix://"),
    ("redis://cache/0?db=two", "REDIS_URL has an option redis-py refuses (Invalid value for 'db'"),
    ("redis://cache/0?sockettimeout=1", "REDIS_URL has an option redis-py refuses"),
    ("redis+sentinel://s1:26379,s2:26379", "REDIS_URL names no Sentinel service; write the master's name"),
    ("redis+sentinel://s1:26379/", "REDIS_URL names no Sentinel service"),
    (
        "redis+sentinel://s1:26379/mymaster/zero",
        "REDIS_URL ends in /mymaster/zero, which is not /service or /service/db",
    ),
    ("redis+sentinel://s1:26379,s2:99999/mymaster", "REDIS_URL has port '99999' for s2"),
    ("redis+sentinel://s1:26379,,s3/mymaster", "REDIS_URL names an empty host; list hosts as host:port"),
    ("redis+sentinel://s1/mymaster?sentinel_password=x", "REDIS_URL has options after ? or #"),
    ("redis+cluster://n1:6379,n2:6379/2", "REDIS_URL ends in /2, but a Redis Cluster has database 0 only"),
    ("redis+cluster://n1:abc", "REDIS_URL has port 'abc' for n1"),
    ("redis+cluster://", "REDIS_URL names an empty host"),
]


@pytest.mark.parametrize("url, words", MALFORMED)
def test_a_malformed_redis_url_is_refused_saying_what_to_write(url: str, words: str) -> None:
    with pytest.raises(ValidationError) as caught:
        Settings(redis_url=url)
    message = str(caught.value)
    assert words in message
    # Each says how a good one looks, of the kind the operator meant.
    assert "e.g. REDIS_URL=" in message or "REDIS_URL must look like" in message


WELL_FORMED = [
    ("redis://cache:6379/0", RedisTarget("server", "redis://cache:6379/0")),
    ("redis://:s3cret@cache/2", RedisTarget("server", "redis://:s3cret@cache/2", db=2)),
    ("rediss://user:pw@cache:6380/1?ssl_cert_reqs=none", None),
    ("unix:///run/redis/redis.sock?db=3", RedisTarget("server", "unix:///run/redis/redis.sock?db=3", db=3)),
    (
        "redis+sentinel://:pw@s1,s2:26380,[::1]:26381/mymaster/4",
        RedisTarget(
            "sentinel",
            "redis+sentinel://:pw@s1,s2:26380,[::1]:26381/mymaster/4",
            nodes=(("s1", 26379), ("s2", 26380), ("::1", 26381)),
            service="mymaster",
            db=4,
            password="pw",
        ),
    ),
    (
        "redis+sentinel://s1:26379/mymaster/",
        RedisTarget("sentinel", "redis+sentinel://s1:26379/mymaster/", nodes=(("s1", 26379),), service="mymaster"),
    ),
    (
        "redis+cluster://app:pw@n1,n2:7001",
        RedisTarget(
            "cluster",
            "redis+cluster://app:pw@n1,n2:7001",
            nodes=(("n1", 6379), ("n2", 7001)),
            username="app",
            password="pw",
        ),
    ),
]


@pytest.mark.parametrize("url, target", WELL_FORMED)
def test_each_documented_form_is_read(url: str, target: RedisTarget | None) -> None:
    assert Settings(redis_url=url).redis_url == url
    if target is not None:
        assert parse_redis_url(url) == target


def test_messages_name_the_topology_and_never_the_password() -> None:
    assert describe("redis://:s3cret@cache:6379/0") == "Redis at redis://:***@cache:6379/0"
    assert describe("redis+sentinel://:s3cret@s1,s2/mymaster") == (
        "Redis (through Sentinel) at redis+sentinel://:***@s1,s2/mymaster"
    )
    assert describe("redis+cluster://app:s3cret@n1:7000") == "Redis Cluster at redis+cluster://app:***@n1:7000"


def test_check_config_serve_and_the_terminal_say_it_the_same_way(tmp_path: Path) -> None:
    """Real subprocesses, started together (each imports opsbot: two seconds of CPU)."""
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL")}
    cases = {
        "check-config": (["check-config", str(SAMPLE_CONFIG)], "redis+sentinel://s1:26379,s2:26379", 1),
        "serve": (["serve"], "redis+sentinel://s1:26379,s2:26379", 2),
        "ask": (["ask", "logs checkout ERROR"], "redis+sentinel://s1:26379,s2:26379", 2),
    }
    running = {
        name: subprocess.Popen(
            [sys.executable, "-m", "opsbot.bot", *args],
            env={**env, "REDIS_URL": url, "SLACK_BOT_TOKEN": "xoxb-test"},
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, (args, url, _) in cases.items()
    }
    said = {}
    for name, process in running.items():
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == cases[name][2], (name, stderr)
        assert "Traceback" not in stderr, stderr
        said[name] = [line for line in stderr.splitlines() if "REDIS_URL" in line]
    sentinel = "environment: REDIS_URL names no Sentinel service; "
    assert said["check-config"] == said["serve"] == said["ask"]
    assert len(said["check-config"]) == 1 and said["check-config"][0].startswith(sentinel)
