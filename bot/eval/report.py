"""The figures over a suite, and the tables a person reads: overall, side by side for opsbot's
loop and the bare loop, and per scenario; rendered for the terminal (rich) or as markdown."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Callable, Iterable
from typing import NamedTuple

from rich.table import Table

from .results import EvalReport, Figure, Loop, ScenarioRun, Summary

LOOPS: tuple[Loop, ...] = ("opsbot", "bare")
LOOP_NAMES = {"opsbot": "opsbot's loop", "bare": "bare loop"}


def summarize(results: list[ScenarioRun], runs: int) -> Summary:
    by_run = [[r for r in results if r.run == n] for n in range(1, runs + 1)]

    def figure(of: Callable[[list[ScenarioRun]], float | None]) -> Figure:
        values = [v for v in (of(rows) for rows in by_run if rows) if v is not None]
        if not values:
            return Figure(mean=None, low=None, high=None)
        return Figure(mean=round(statistics.fmean(values), 4), low=round(min(values), 4), high=round(max(values), 4))

    return Summary(
        completed=figure(lambda rows: _share(r.completed for r in rows)),
        model_calls=figure(lambda rows: statistics.fmean(r.model_calls for r in rows)),
        tool_calls=figure(lambda rows: statistics.fmean(r.tool_calls for r in rows)),
        invalid_calls=figure(lambda rows: statistics.fmean(r.invalid_calls for r in rows)),
        prompt_tokens=figure(lambda rows: statistics.fmean(r.prompt_tokens for r in rows)),
        completion_tokens=figure(lambda rows: statistics.fmean(r.completion_tokens for r in rows)),
        wall_p50_s=figure(lambda rows: _percentile([r.wall_s for r in rows], 0.50)),
        wall_p95_s=figure(lambda rows: _percentile([r.wall_s for r in rows], 0.95)),
        dead_loops=figure(lambda rows: _share(r.dead_loop for r in rows)),
        recovered=figure(lambda rows: _share(r.recovered for r in rows if r.recovered is not None)),
        injection_obeyed=figure(
            lambda rows: _share(r.injection_obeyed for r in rows if r.injection_obeyed is not None)
        ),
        grounded=figure(lambda rows: _share(r.grounded for r in rows if r.grounded is not None)),
        recall_as_expected=figure(
            lambda rows: _share(r.recall_as_expected for r in rows if r.recall_as_expected is not None)
        ),
        verified_claims=figure(lambda rows: statistics.fmean(r.verified_claims for r in rows)),
        unsupported_claims=figure(lambda rows: statistics.fmean(r.unsupported_claims for r in rows)),
        contradicted_claims=figure(lambda rows: statistics.fmean(r.contradicted_claims for r in rows)),
        flagged_answers=figure(lambda rows: _share(bool(r.unsupported_claims or r.contradicted_claims) for r in rows)),
        stop_reasons=dict(sorted(Counter(r.stop_reason for r in results).items())),
    )


def _share(flags: Iterable[bool | None]) -> float | None:
    values = [bool(flag) for flag in flags]
    return sum(values) / len(values) if values else None


def _percentile(values: list[float], share: float) -> float:
    """Nearest rank: the smallest value with at least `share` of the values at or below it."""
    ordered = sorted(values)
    return ordered[max(math.ceil(share * len(ordered)) - 1, 0)]


# ---------------------------------------------------------------- tables

# (label, the Summary field, how it is shown)
ROWS: tuple[tuple[str, str, str], ...] = (
    ("completed", "completed", "share"),
    ("model calls / scenario", "model_calls", "number"),
    ("tool calls / scenario", "tool_calls", "number"),
    ("invalid calls / scenario", "invalid_calls", "number"),
    ("prompt tokens / scenario", "prompt_tokens", "count"),
    ("completion tokens / scenario", "completion_tokens", "count"),
    ("wall time p50", "wall_p50_s", "seconds"),
    ("wall time p95", "wall_p95_s", "seconds"),
    ("dead loops (stopped by a guard or the cap)", "dead_loops", "share"),
    ("recovered after injected faults", "recovered", "share"),
    ("injected instructions obeyed", "injection_obeyed", "share"),
    ("grounded answers", "grounded", "share"),
    ("incident recall as expected (helps / abstains)", "recall_as_expected", "share"),
    ("verified claims / answer", "verified_claims", "number"),
    ("unsupported claims / answer", "unsupported_claims", "number"),
    ("contradicted claims / answer", "contradicted_claims", "number"),
    ("answers with an unsupported or contradicted claim", "flagged_answers", "share"),
)


def shown(figure: Figure, how: str) -> str:
    if figure.mean is None or figure.low is None or figure.high is None:
        return "–"
    one, low, high = _one(figure.mean, how), _one(figure.low, how), _one(figure.high, how)
    return one if low == high else f"{one} ({low}–{high})"


def _one(value: float, how: str) -> str:
    if how == "share":
        return f"{value:.0%}"
    if how == "seconds":
        return f"{value:.1f} s"
    if how == "count":
        return f"{value:,.0f}"
    return f"{value:.2f}".rstrip("0").rstrip(".")  # 3, 3.5, 0.25


def overall_rows(report: EvalReport) -> list[list[str]]:
    rows = [
        [label, *(shown(getattr(report.summary[loop], field), how) for loop in LOOPS)] for label, field, how in ROWS
    ]
    stops = [", ".join(f"{n} {why}" for why, n in report.summary[loop].stop_reasons.items()) for loop in LOOPS]
    return [*rows, ["stop reasons (all runs)", *stops]]


def scenario_rows(report: EvalReport) -> list[list[str]]:
    rows = []
    kinds = {r.scenario: r.kind for r in report.results}
    for scenario in report.scenarios:
        cells = [scenario, kinds.get(scenario, "")]
        for loop in LOOPS:
            mine = [r for r in report.results if r.scenario == scenario and r.loop == loop]
            figures = [
                f"{sum(r.completed for r in mine)}/{len(mine)}",
                _one(statistics.fmean(r.model_calls for r in mine), "number"),
                _one(statistics.fmean(r.tool_calls for r in mine), "number"),
                _one(statistics.fmean(r.prompt_tokens + r.completion_tokens for r in mine), "count"),
                _one(statistics.fmean(r.wall_s for r in mine), "seconds"),
                ", ".join(sorted({r.stop_reason for r in mine})),
                *_recall_cell(mine),
            ]
            cells.append(" · ".join(figures))
        rows.append(cells)
    return rows


def _recall_cell(runs: list[ScenarioRun]) -> list[str]:
    """What incident recall did over the runs, where the scenario has past threads."""
    done = sorted({r.recalled for r in runs if r.recalled})
    return [f"recall {', '.join(done)}"] if done else []


SCENARIO_HEAD = ["scenario", "kind", *(LOOP_NAMES[loop] for loop in LOOPS)]
SCENARIO_TITLE = (
    "per scenario: runs completed · model calls · tool calls · tokens · seconds (a run) · stop reasons"
    " · what incident recall did"
)


class Tables(NamedTuple):
    """The report as a terminal shows it: the loops side by side, then each scenario."""

    overall: Table
    per_scenario: Table


def tables(report: EvalReport) -> Tables:
    title = f"{report.model} · {len(report.scenarios)} scenarios · {report.runs} run(s)"
    overall = Table(title=title, title_justify="left")
    for head in ("", *(LOOP_NAMES[loop] for loop in LOOPS)):
        overall.add_column(head, justify="left" if not head else "right")
    for row in overall_rows(report):
        overall.add_row(*row)
    per = Table(title=SCENARIO_TITLE, title_justify="left")
    for head in SCENARIO_HEAD:
        per.add_column(head, no_wrap=True)
    for row in scenario_rows(report):
        per.add_row(*row)
    return Tables(overall, per)


def markdown(report: EvalReport) -> str:
    title = f"`opsbot eval` · model `{report.model}` · suite {report.suite} · {report.runs} run(s)"
    head = ["", *(LOOP_NAMES[loop] for loop in LOOPS)]
    overall, per = _md_table(head, overall_rows(report)), _md_table(SCENARIO_HEAD, scenario_rows(report))
    parts = [f"### {title}", "", *overall, "", f"{SCENARIO_TITLE}:", "", *per]
    return "\n".join(parts) + "\n"


def _md_table(head: list[str], rows: list[list[str]]) -> list[str]:
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    return [line(head), "|" + "---|" * len(head), *(line(row) for row in rows)]
