"""Charts in a thread: each drawn as a PNG (bot/charts) and shared with `upload_once`, named by
its job and its place, titled with its query and range, with alt text saying what it shows.

A chart is an extra beside an answer: one that cannot be drawn or shared is logged and left
out, and the answer goes out all the same. They are shared before the answer's own message,
which marks the job answered: a job taken over after a crash finds its charts by name and
shares none twice."""

from __future__ import annotations

import logging
import re

from slack_sdk import WebClient

from ..charts import Chart, draw_png
from .blocks import Attachment
from .posting import PostFailed, upload_once

log = logging.getLogger("opsbot.slack")


def chart_file(chart: Chart, job_id: str, n: int) -> Attachment:
    """`chart` drawn, as the file shared for the `n`th chart of job `job_id`."""
    name = f"opsbot-chart-{re.sub(r'[^A-Za-z0-9_-]', '-', job_id)}-{n}.png"
    return Attachment(name, chart.title, draw_png(chart), alt_text=chart.alt_text)


def share_charts(
    client: WebClient, channel: str, thread_ts: str | None, job_id: str, charts: list[Chart], check_first: bool
) -> int:
    """Share each chart in the thread exactly once; how many were shared (found shared already included)."""
    shared = 0
    for n, chart in enumerate(charts, 1):
        try:
            upload_once(client, channel, thread_ts, chart_file(chart, job_id, n), check_first=check_first)
            shared += 1
        except PostFailed as exc:
            log.warning("chart %d of %s not shared: %s", n, job_id, exc.error)
        except Exception:  # matplotlib failing on some data must not cost the answer
            log.exception("chart %d of %s could not be drawn", n, job_id)
    return shared
