"""A real Prometheus (Debian's `prometheus`) on a free port, for tests and benches: 1 s scrapes
of the jobs given, an empty TSDB of its own, stopped on leaving."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

import httpx

from tests.fakes.redis_server import free_port
from tests.fakes.waiting import until

PROMETHEUS = shutil.which("prometheus")
MISSING = "Debian's prometheus is not on PATH: apt-get install prometheus"


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
