"""The sources of query_logs that are processes, both run through tools/runner.py: journald
units (journalctl) and a service's log_command (a command of the policy, through CommandBook).
tools/logs/__init__.py describes their contract."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ...config.policy import Command, Policy, Principal, log_command_problem
from ..base import ErrorType, ToolResult
from ..commands import CommandBook
from ..redact import redact_text
from ..runner import SYSTEM_PATH, Completed, Sandbox, run, which
from .args import QueryLogsArgs
from .files import MIB
from .filters import Filters
from .match import prefilter_for
from .scan import Part, Scan, mb, scan_text

# journald: at most this many entries per query, this much output, this long.
JOURNAL_ENTRIES = 10_000
JOURNAL_OUTPUT_BYTES = 8 * MIB
JOURNAL_TIMEOUT_S = 10.0
# log_command: at most this many lines asked for through a `lines` parameter.
COMMAND_LINES = 10_000
EXCERPT_CHARS = 300
_PRIORITIES = {"DEBUG": "debug", "INFO": "info", "WARN": "warning", "ERROR": "err"}
# Killing and reaping a process group takes a moment after its own timeout.
REAP_GRACE_S = 5.0


@dataclass(frozen=True)
class Readers:
    """How the sources that are not files are read: the journalctl binary (None: not installed),
    the policy's commands, and why a command cannot serve as a log command, by command name."""

    journalctl: str | None = None
    commands: CommandBook | None = None
    broken: Mapping[str, str] = field(default_factory=dict)


def readers_for(policy: Policy, journalctl: str | None = None) -> Readers:
    """Everything resolved once, when the tool is built: journalctl on the fixed system PATH
    (`journalctl` overrides it: an absolute path, for tests), commands' executables by CommandBook."""
    wanted = {s.log_command for s in policy.services.values() if s.log_command is not None}
    broken = {}
    for name in sorted(wanted):
        problem = log_command_problem(policy, name)
        if problem is not None:
            broken[name] = problem
    return Readers(
        journalctl=journalctl if journalctl is not None else which("journalctl"),
        commands=CommandBook(policy) if wanted else None,
        broken=broken,
    )


# ---------------------------------------------------------------- journald and log commands


def journal_argv(journalctl: str, units: Iterable[str], level: str | None, f: Filters) -> list[str]:
    """The one journalctl run of a query: newest entries first, journald's own filters first."""
    argv = [journalctl, "--no-pager", "--quiet", "--output=short-iso-precise", "--reverse"]
    argv.append(f"--lines={JOURNAL_ENTRIES}")
    argv += [f"--unit={unit}" for unit in units]
    if f.since is not None:
        argv.append(f"--since=@{math.floor(f.since)}")
    if f.until is not None:
        argv.append(f"--until=@{math.ceil(f.until)}")
    if level is not None:
        argv.append(f"--priority={_PRIORITIES[level]}")
    return argv


def query_journal(args: QueryLogsArgs, units: list[str], f: Filters, journalctl: str | None) -> Part | ToolResult:
    what = f"the journal of {', '.join(units)}"
    if journalctl is None:
        return ToolResult.failure(
            ErrorType.unavailable,
            f"journalctl is not installed on the opsbot host (looked for on {SYSTEM_PATH}), so {what} cannot be read",
            hint="tell the user; the service's other log sources, if any, may still be read",
        )
    argv = journal_argv(journalctl, units, args.level, f)
    done = run(argv, Sandbox(timeout_s=JOURNAL_TIMEOUT_S, max_output_bytes=JOURNAL_OUTPUT_BYTES, keep="head"))
    failure = _run_failure(done, f"journalctl, reading {what},")
    if failure is not None:
        return failure
    lines = done.output.split("\n")
    if done.cut or lines[-1] == "":
        lines.pop()  # a line cut by the cap, or the empty string after the last newline
    entries = _entries(lines)
    # The level was journald's priority; level words in the text mean nothing more here. The
    # lines are journalctl's short-iso, whatever time the service declared for its own lines.
    filters = dataclasses.replace(f, min_rank=None, prefilter=prefilter_for(f.needle, None, args.regex), declared=None)
    scan = Scan(filters, args.limit)
    scan_text("\n".join(line for entry in reversed(entries) for line in entry), done.output_bytes, scan)
    if scan.stopped:
        pass
    elif done.cut:
        scan.stopped = f"journalctl's output reached its cap of {mb(JOURNAL_OUTPUT_BYTES)}"
    elif len(entries) >= JOURNAL_ENTRIES:
        scan.stopped = f"journalctl returned its cap of {JOURNAL_ENTRIES:,} entries"
    return Part(scan, f"{mb(done.output_bytes)} of {what}", [], f"journald: {', '.join(units)}")


def _entries(newest_first: list[str]) -> list[list[str]]:
    """Journal entries, newest first, each its lines in order: a line starting with white space
    continues the entry above it (a multi-line message); "-- Boot ... --" markers are dropped."""
    entries: list[list[str]] = []
    for line in newest_first:
        if line.startswith("-- ") and line.endswith(" --"):
            continue
        if line[:1].isspace() and entries:
            entries[-1].append(line)
        elif line:
            entries.append([line])
    return entries


def query_command(
    args: QueryLogsArgs, name: str, f: Filters, principal: Principal | None, readers: Readers
) -> Part | ToolResult:
    if name in readers.broken or readers.commands is None:
        problem = readers.broken.get(name, f"log_command {name!r} cannot be run")
        return ToolResult.failure(
            ErrorType.unavailable,
            f"the logs of {args.service} cannot be read with a command: {problem}",
            hint="tell the user the opsbot policy needs fixing; the service's other log sources may still be read",
        )
    spec = readers.commands.commands[name]
    params = _filled_params(spec, f)
    prepared = readers.commands.prepare(name, params, principal)
    if isinstance(prepared, ToolResult):
        if prepared.error is not None and prepared.error.type is ErrorType.invalid_args:
            return ToolResult.failure(
                ErrorType.unavailable,
                f"log_command {name!r} refused the values query_logs filled in: {prepared.error.message}",
                hint="tell the user the command's parameters in the opsbot policy need fixing",
            )
        return prepared
    done = run(prepared.argv, dataclasses.replace(prepared.sandbox(), keep="tail"))
    failure = _run_failure(done, f"command {name!r}")
    if failure is not None:
        return failure
    lines = done.output.split("\n")
    if done.cut:
        lines.pop(0)  # cut in the middle by the cap
    if lines and lines[-1] == "":
        lines.pop()
    scan = Scan(f, args.limit)
    scan_text("\n".join(lines), done.output_bytes, scan)
    asked = params.get("lines")
    if scan.stopped:
        pass
    elif done.cut:
        scan.stopped = f"the output of {name!r} reached its cap of {mb(spec.max_output_bytes)}"
    elif asked is not None and len(lines) >= int(asked):
        scan.stopped = f"{name!r} returned the {int(asked):,} lines asked for"
    return Part(scan, f"{mb(done.output_bytes)} of the output of {name!r}", [], f"command: {name}")


def _filled_params(spec: Command, f: Filters) -> dict[str, str | int]:
    """The values query_logs gives a log command: `since` and `lines`, when it declares them."""
    params: dict[str, str | int] = {}
    if "since" in spec.params and f.since is not None:
        # Rounded first: now - (now - 7200) is 7200.0000002 in floating point, not 7201 s.
        params["since"] = f"{max(1, math.ceil(round(f.now - f.since, 3)))}s"
    if "lines" in spec.params:
        top = spec.params["lines"].max
        params["lines"] = min(COMMAND_LINES, top) if top is not None else COMMAND_LINES
    return params


def _run_failure(done: Completed, what: str) -> ToolResult | None:
    """`unavailable` when the program could not start or failed, `timeout` when it was killed,
    `cancelled` when the user gave up the question."""
    if done.error is not None:
        return ToolResult.failure(
            ErrorType.unavailable, f"{what} could not run: {done.error}", hint="tell the user; do not retry"
        )
    if done.cancelled:
        return ToolResult.failure(ErrorType.cancelled, f"{what} was killed because the user cancelled the question")
    if done.timed_out:
        return ToolResult.failure(
            ErrorType.timeout,
            f"{what} was still running after {done.duration_s:.1f}s (its timeout) and was killed",
            hint="narrow the query with since/until, or try later",
        )
    if done.exit_code != 0:
        return ToolResult.failure(
            ErrorType.unavailable,
            f"{what} failed (exit code {done.exit_code}): {_excerpt(done.output)}",
            hint="tell the user what it said; do not retry the same query",
        )
    return None


def _excerpt(output: str) -> str:
    """The last few lines a failing program printed (where its error usually is), short and redacted."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    text = " | ".join(lines[-3:]) or "(it printed nothing)"
    if len(text) > EXCERPT_CHARS:
        text = "…" + text[-EXCERPT_CHARS:]
    return redact_text(text)
