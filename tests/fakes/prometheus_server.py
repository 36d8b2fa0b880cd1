"""A real Prometheus (Debian's `prometheus`) on a free port, for tests and benches: 1 s scrapes
of the jobs given, an empty TSDB of its own, stopped on leaving. `node_prometheus`: one scraping a
real node_exporter and itself (tests/conftest.py's module-scoped `node_prometheus` fixture)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

import httpx
import pytest

from tests.fakes.redis_server import free_port
from tests.fakes.waiting import until

PROMETHEUS = shutil.which("prometheus")
MISSING = "Debian's prometheus is not on PATH: apt-get install prometheus"
NODE_EXPORTER = shutil.which("prometheus-node-exporter")
needs_node_exporter = pytest.mark.skipif(
    PROMETHEUS is None or NODE_EXPORTER is None,
    reason="Debian's prometheus and prometheus-node-exporter are not on PATH: "
    "apt-get install prometheus prometheus-node-exporter",
)
# A GitHub token's shape, built here so no scanner takes this file for a leak: the node target's
# `api_token` label, which every tool result must show redacted.
LABEL_TOKEN = "ghp_" + "A1b2C3d4" * 4 + "E5f6"


class Running(NamedTuple):
    url: str
    log: Path


def scrape_job(name: str, target: str, path: str = "/metrics") -> str:
    """One scrape_configs entry of a static target, as YAML."""
    static = f"[{{targets: [{json.dumps(target)}]}}]"
    return f"  - job_name: {name}\n    metrics_path: {path}\n    static_configs: {static}\n"


@contextmanager
def prometheus(tmp: Path, jobs: str = "", rules: Path | None = None, port: int | None = None) -> Iterator[Running]:
    """Prometheus scraping `jobs` (scrape_configs entries, YAML) every second, once it says it is ready."""
    assert PROMETHEUS is not None, MISSING
    port = port or free_port()
    config = tmp / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        + (f"rule_files: [{json.dumps(str(rules))}]\n" if rules else "")
        + "scrape_configs:\n"
        + (jobs or "  []\n")
    )
    log = tmp / "prometheus.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [
                PROMETHEUS,
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=out,
            stderr=out,
        )
    url = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        return httpx.get(f"{url}/-/ready", timeout=2).status_code == 200

    try:
        ready = until(answers, 60, interval=0.2, ignore=(httpx.HTTPError,))
        assert ready, log.read_text()[-3000:]
        yield Running(url, log)
    finally:
        server.terminate()
        server.wait(10)


def _started(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(argv, stdout=out, stderr=out)


@contextmanager
def node_prometheus(tmp: Path) -> Iterator[Running]:
    """A real Prometheus (1s scrapes) of a real node_exporter and of itself, once targets are up
    and a few samples of node_cpu_seconds_total exist."""
    assert NODE_EXPORTER is not None
    node_port, prom_port = free_port(), free_port()
    # A few collectors only: a scrape must finish within the 1 s interval on a busy machine.
    collectors = ["--collector.disable-defaults", "--collector.cpu", "--collector.loadavg", "--collector.meminfo"]
    node = _started([NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{node_port}", *collectors], tmp / "node.log")
    (tmp / "targets.json").write_text(
        json.dumps([{"targets": [f"127.0.0.1:{node_port}"], "labels": {"env": "test", "api_token": LABEL_TOKEN}}])
    )
    jobs = (
        "  - job_name: node\n"
        f"    file_sd_configs: [{{files: [{json.dumps(str(tmp / 'targets.json'))}]}}]\n"
        + scrape_job("prometheus", f"127.0.0.1:{prom_port}")
    )
    try:
        with prometheus(tmp, jobs, port=prom_port) as running:

            def count(expr: str) -> float:
                answer = httpx.get(f"{running.url}/api/v1/query", params={"query": expr}, timeout=2).json()
                result = answer["data"]["result"]
                return float(result[0]["value"][1]) if result else 0.0

            ready = until(
                lambda: (
                    count('count(up{job=~"node|prometheus"} == 1)') == 2
                    and count("count_over_time(node_cpu_seconds_total[1m]) > 4") > 0
                ),
                60,
                interval=0.3,
                ignore=(httpx.HTTPError, KeyError, ValueError),
            )
            assert ready, running.log.read_text()[-3000:] + (tmp / "node.log").read_text()[-2000:]
            yield running
    finally:
        node.terminate()
        node.wait(10)
