"""The `opsbot` command: chat in a terminal, ask one question, check a config file.

Whatever it prints that is not a constant goes through bot.terminal (`echo`, its consoles, the log
formatter), where text from outside is made inert: a log line, an answer or a config value shown
here can never act on the terminal that shows it (bot/terminal/screen.py)."""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from typing import Any, TypeVar

import click
from pydantic import ValidationError

from ..config.check import ConfigError
from ..config.sample_env import prepare_sample
from ..config.settings import SAMPLE_CONFIG, Settings, environment_problems
from ..tools.base import ToolResult
from ..tools.logs import TIME_HINT, time_arg
from .agent import Progress, recalled_text
from .agent.prompts import no_model_text
from .build import build_agent
from .charts import chart_of
from .commands import HANDOFF_SINCE, Handoff, History, Question, decide, run_command
from .config_check import check_config_file
from .terminal import TERMINAL_USER, InertFormatter, PlainProgress, checked_lines, console, echo, say, show_charts
from .version import VERSION

EXIT_CONFIG = 2
EXIT_USAGE = 2
EXIT_NO_ANSWER = 3

_Decorated = TypeVar("_Decorated", bound=Callable[..., Any])


@dataclass
class Globals:
    """The top-level options, wherever they were given: `opsbot -v ask ...` or `opsbot ask ... -v`."""

    config_path: Path | None = None
    verbose: bool = False


def _set_config(ctx: click.Context, param: click.Parameter, value: Path | None) -> None:
    if value is not None:  # given after the subcommand too, the later one wins
        ctx.ensure_object(Globals).config_path = value


def _set_verbose(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    state = ctx.ensure_object(Globals)
    state.verbose = state.verbose or value
    logging.getLogger().setLevel(logging.INFO if state.verbose else logging.WARNING)


def global_options(*, envvar: bool) -> Callable[[_Decorated], _Decorated]:
    """The top-level options, for the group and (without the environment variable, which the group
    reads once) for every subcommand, so they may be typed before or after it."""

    def add(f: _Decorated) -> _Decorated:
        f = click.option(
            "-v",
            "--verbose",
            is_flag=True,
            expose_value=False,
            callback=_set_verbose,
            help="Log every step as a JSON record on stderr.",
        )(f)
        f = click.option(
            "--config",
            type=click.Path(path_type=Path, dir_okay=False),
            envvar="OPSBOT_CONFIG" if envvar else None,
            expose_value=False,
            callback=_set_config,
            help="YAML config file (default: $OPSBOT_CONFIG, else the bundled sample environment).",
        )(f)
        return click.version_option(VERSION, "--version", prog_name="opsbot", message="%(prog)s %(version)s")(f)

    return add


class Opsbot(click.Group):
    """The `opsbot` group: every subcommand gets the top-level options, and a usage error is shown
    as the usage line, what is wrong, and where the help is, never the whole help."""

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        super().add_command(global_options(envvar=False)(cmd), name)

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        with self._usage_errors_shown():
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        with self._usage_errors_shown():  # the subcommand's own line is parsed in here
            return super().invoke(ctx)

    @contextmanager
    def _usage_errors_shown(self) -> Iterator[None]:
        try:
            yield
        except click.exceptions.NoArgsIsHelpError as exc:  # `opsbot` alone
            _show_usage(exc.ctx, f"Missing command: one of {', '.join(self.list_commands(exc.ctx))}.")
            raise click.exceptions.Exit(exc.exit_code) from exc
        except click.UsageError as exc:
            _show_usage(exc.ctx, exc.format_message())
            raise click.exceptions.Exit(exc.exit_code) from exc


def _show_usage(ctx: click.Context | None, problem: str) -> None:
    if ctx is not None:
        echo(ctx.get_usage(), err=True)
    echo(f"Error: {' '.join(problem.split())}", err=True, fg="red")
    if ctx is not None:
        echo(f"Try '{ctx.command_path} --help' for help.", err=True)


@click.group(cls=Opsbot, context_settings={"help_option_names": ["-h", "--help"]})
@global_options(envvar=True)
def main() -> None:
    """opsbot: an on-call assistant that shows every step it takes."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(InertFormatter("%(message)s"))
    logging.basicConfig(handlers=[handler])  # its level is the -v option's (_set_verbose)


def _globals(ctx: click.Context) -> Globals:
    return ctx.ensure_object(Globals)


def _settings(ctx: click.Context) -> Settings:
    path = _globals(ctx).config_path
    if path is None:
        # A copy whose logs end a few minutes ago, so `logs checkout ERROR since=2h` finds what README shows.
        path = prepare_sample(SAMPLE_CONFIG, VERSION)
        # Where the copy lives is docs/terminal.md's to say: it is not what the person asked about.
        redated = ", its logs re-dated to end now" if path != SAMPLE_CONFIG else ""
        echo(
            f"Using the bundled sample environment ({SAMPLE_CONFIG}){redated}; set OPSBOT_CONFIG for yours.",
            err=True,
            fg="bright_black",
        )
    try:
        return Settings.load(path)
    except ConfigError as exc:
        echo(str(exc), err=True, fg="red")
        echo(f"Fix the file, then check it with: opsbot --config {path} check-config", err=True)
        raise click.exceptions.Exit(EXIT_CONFIG) from exc
    except ValidationError as exc:
        for line in environment_problems(exc):
            echo(line, err=True, fg="red")
        raise click.exceptions.Exit(EXIT_CONFIG) from exc


@main.command()
@click.option("--thread", default="cli:default", show_default=True, help="Conversation to continue.")
@click.option("--plain", is_flag=True, help="Plain lines: no spinner, no rendered markdown (as when output is piped).")
@click.pass_context
def chat(ctx: click.Context, thread: str, plain: bool) -> None:
    """Talk to opsbot in this terminal. Each step is shown as it happens; Ctrl-C gives a question up."""
    from .terminal.session import ChatSession  # prompt_toolkit and rich's markdown: only for a chat

    settings = _settings(ctx)
    agent = build_agent(settings)
    # The step log (-v) goes to stderr line by line, which a live area would tear: -v is plain.
    session = ChatSession.open(agent, settings.policy, thread, plain=plain or _globals(ctx).verbose)
    session.banner(settings.model if agent.model else "(none)")
    try:
        session.loop()
    except KeyboardInterrupt:  # a second Ctrl-C while a question was being given up
        click.echo()


@main.command()
@click.argument("question")
@click.option("--thread", default="cli:default", show_default=True, help="Conversation to continue.")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print JSON: a question's text, stop reason, checked, steps and usage; a direct command's text and "
    "whole result.",
)
@click.pass_context
def ask(ctx: click.Context, question: str, thread: str, as_json: bool) -> None:
    """Ask one question (or run one direct command) and print the answer."""
    if not question.strip():
        # Before anything is loaded: an empty question would cost a model's whole turn to answer nothing.
        echo('opsbot ask needs a question or a direct command, e.g. opsbot ask "services"', err=True, fg="red")
        ctx.exit(EXIT_USAGE)
    settings = _settings(ctx)
    agent = build_agent(settings)
    decision = decide(settings.policy, question, can_ask=agent.model is not None)
    if not isinstance(decision, Question):
        output = run_command(agent, decision, thread, TERMINAL_USER)
        echo(json.dumps(output.as_json()) if as_json else output.text)
        chart = chart_of(output.tool, output.result)
        if chart is not None and not as_json:
            show_charts(console(sys.stderr), [chart])  # beside the steps: stdout stays the output alone
        ctx.exit(0 if output.ok else 1)
    if as_json:
        # Nothing streams: stdout is one JSON document (`checked` says whether tools backed the answer).
        # Made inert as text, it decodes to the reply as it was: the data is whole for a program,
        # and no raw control or bidi character reaches a terminal it is printed on.
        reply = agent.run(question, thread=thread, progress=Progress(), principal=TERMINAL_USER)
        echo(reply.model_dump_json(indent=2))
    else:
        progress = PlainProgress(console(sys.stderr), console(sys.stdout))
        reply = agent.run(question, thread=thread, progress=progress, principal=TERMINAL_USER)
        progress.finish(reply.text, None)
        show_charts(console(sys.stderr), reply.charts)
        told = recalled_text(reply.recalled, time.time())
        if told:
            echo(told, err=True, fg="bright_black")
        for line, style in checked_lines(reply):
            # Beside the steps on stderr, whose lines the footnotes point at: stdout stays the
            # answer alone, for whoever pipes it.
            say(console(sys.stderr), line, style)
    if agent.recollection is not None:
        agent.recollection.remember(question, reply, TERMINAL_USER)
    if reply.stop_reason in ("no_model", "no_answer", "llm_unavailable", "memory_unavailable", "busy"):
        ctx.exit(EXIT_NO_ANSWER)


@main.command("eval")
@click.option(
    "--suite", default="builtin", show_default=True, help="`builtin`, or a YAML file or directory of scenarios."
)
@click.option("--runs", default=1, show_default=True, type=click.IntRange(1, 100), help="Repeat each scenario.")
@click.option("--json", "json_path", type=click.Path(path_type=Path, dir_okay=False), help="Write the results here.")
@click.option("--markdown", "markdown_path", type=click.Path(path_type=Path, dir_okay=False), help="And the tables.")
@click.pass_context
def eval_(ctx: click.Context, suite: str, runs: int, json_path: Path | None, markdown_path: Path | None) -> None:
    """Run incident scenarios against the configured model: opsbot's loop beside a bare loop."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from .eval import SuiteError, evaluate, load_suite, markdown, tables

    # Only the model settings matter: every scenario brings its own environment.
    settings = _settings(ctx) if _globals(ctx).config_path is not None else Settings()
    if not settings.model_configured:
        echo(f"opsbot eval needs a model: {no_model_text()}", err=True, fg="red")
        ctx.exit(EXIT_CONFIG)
    try:
        scenarios = load_suite(suite)
    except SuiteError as exc:
        echo(str(exc), err=True, fg="red")
        ctx.exit(EXIT_CONFIG)
    out = console(sys.stdout)
    if not out.is_terminal:
        out.width = 160  # a file or a pipe: room for the scenario names, rather than 80 columns
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console(sys.stderr), transient=True) as bar:
        task = bar.add_task("scenarios", total=len(scenarios.scenarios) * runs * 2)
        report = evaluate(settings, scenarios, runs, lambda run: bar.update(task, advance=1, description=run.scenario))
    for table in tables(report):
        out.print(table)
    if json_path is not None:
        json_path.write_text(report.model_dump_json(indent=2) + "\n")
    if markdown_path is not None:
        markdown_path.write_text(markdown(report))


@main.command()
@click.option("--http", "http", is_flag=True, help="Serve the Events API over HTTP on $PORT instead of Socket Mode.")
@click.option(
    "--port", envvar="PORT", default=3000, show_default=True, type=click.IntRange(1, 65535), help="HTTP port (--http)."
)
@click.pass_context
def serve(ctx: click.Context, http: bool, port: int) -> None:
    """Serve Slack: Socket Mode (SLACK_APP_TOKEN), or HTTP with --http (SLACK_SIGNING_SECRET)."""
    from .slack.app import SlackApp, StartupError
    from .slack.serving import serve_slack

    settings = _settings(ctx)
    logging.getLogger("opsbot").setLevel(logging.INFO)

    def started(slack: SlackApp) -> None:
        where = f"HTTP on port {port}" if http else "Socket Mode"
        echo(f"opsbot {VERSION} serving Slack as {slack.identity.user_id} ({where})", err=True)

    try:
        serve_slack(settings, http, port, started)
    except StartupError as exc:
        echo(f"opsbot cannot start: {exc}", err=True, fg="red")
        raise click.exceptions.Exit(EXIT_CONFIG) from exc


@main.command("mcp-serve")
@click.option(
    "--http",
    "http",
    is_flag=False,
    flag_value="",  # --http alone: the default address
    default=None,
    metavar="[HOST:PORT]",
    help="Serve Streamable HTTP at /mcp (default 127.0.0.1:8765), bearer tokens required; else stdio.",
)
@click.pass_context
def mcp_serve(ctx: click.Context, http: str | None) -> None:
    """Serve opsbot's tools to other agents over MCP, under the policy (docs/mcp-serve.md)."""
    from .mcp_serve import ServeError, address, serve

    try:
        where = address(http) if http is not None else None
    except ValueError as exc:
        raise click.BadParameter(f"{exc}; give HOST:PORT, e.g. 127.0.0.1:8765", param_hint="--http") from exc
    settings = _settings(ctx)
    try:
        serve(settings, where, lambda said: echo(f"opsbot {VERSION} serving MCP {said}", err=True))
    except ServeError as exc:
        echo(f"opsbot mcp-serve cannot start: {exc}", err=True, fg="red")
        raise click.exceptions.Exit(EXIT_CONFIG) from exc


@main.command()
@click.option("--since", default="24h", show_default=True, help="How far back: 15m, 2h, 1d, or an ISO-8601 time.")
@click.option("--thread", default=None, help="Only this thread's records (its key, as the records show it).")
@click.option("--json", "as_json", is_flag=True, help="One JSON record per line.")
@click.option(
    "--feedback",
    "feedback",
    is_flag=True,
    help="Only the negative feedback on answers (each person's last word on each), newest first, with its thread.",
)
@click.pass_context
def audit(ctx: click.Context, since: str, thread: str | None, as_json: bool, feedback: bool) -> None:
    """Read back the audit trail kept in Redis: tool calls, approvals, write commands, alerts and feedback."""
    settings = _settings(ctx)
    if not settings.redis_url:
        echo(
            "The audit trail is kept in Redis: set REDIS_URL to the Redis opsbot serves Slack with. "
            "Without Redis, records are only on the opsbot.audit logger (opsbot -v).",
            err=True,
            fg="red",
        )
        ctx.exit(EXIT_CONFIG)
    start = time_arg("--since", since, UTC, time.time())
    if isinstance(start, ToolResult):
        raise click.BadParameter(TIME_HINT, param_hint="--since")
    from .redis.client import REDIS_ERRORS, connect, describe
    from .telemetry.audit import RedisAudit, negative_feedback

    try:
        entries = list(RedisAudit(connect(settings.redis_url), settings.audit.ttl_s).read(start, thread))
    except REDIS_ERRORS as exc:
        echo(f"Cannot read the audit trail from {describe(settings.redis_url)}: {exc}", err=True, fg="red")
        ctx.exit(1)
    if feedback:
        entries = negative_feedback(entries)
    for entry in entries:
        echo(entry.model_dump_json(exclude_none=True) if as_json else entry.line())
    if not entries and not as_json:
        what = "negative feedback" if feedback else "audit records"
        echo(f"No {what} since {since}{f' in thread {thread}' if thread else ''}.", err=True)


@main.command()
@click.argument("words", nargs=-1, required=True)
@click.pass_context
def history(ctx: click.Context, words: tuple[str, ...]) -> None:
    """Past incidents like the words: where, the cause, the fix and who approved it (docs/incidents.md)."""
    _remembered(ctx, History(words=" ".join(words)))


@main.command()
@click.option("--since", default=HANDOFF_SINCE, show_default=True, help="How far back: 12h, 1d, or an ISO-8601 time.")
@click.option("--thread", default=None, help="Only this thread (its key, as `opsbot audit` shows it).")
@click.option("--summary", is_flag=True, help="The model's summary above the entries, which stay as recorded.")
@click.pass_context
def handoff(ctx: click.Context, since: str, thread: str | None, summary: bool) -> None:
    """What happened, as recorded: questions, findings, commands, approvals, alerts, runbook runs."""
    _remembered(ctx, Handoff(since=since, thread=thread, summary=summary))


def _remembered(ctx: click.Context, command: History | Handoff) -> None:
    settings = _settings(ctx)
    if not settings.redis_url:
        echo("Without REDIS_URL, incident records and the audit trail last only as long as one process.", err=True)
    output = run_command(build_agent(settings), command, "cli:default", TERMINAL_USER)
    echo(output.text)
    ctx.exit(0 if output.ok else 1)


@main.command("check-config")
@click.argument("path", required=False, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--model", "ask_model", is_flag=True, help="Also ask the model endpoint whether it serves the model.")
@click.pass_context
def check_config(ctx: click.Context, path: Path | None, ask_model: bool) -> None:
    """Check a YAML config file and what it names on this host; print every problem with its line."""
    target = path or _globals(ctx).config_path
    if target is None:
        raise click.UsageError("name a file: opsbot check-config PATH (or set OPSBOT_CONFIG)")
    try:
        found = check_config_file(target, model=ask_model)
    except ConfigError as exc:
        echo(str(exc), err=True, fg="red")
        ctx.exit(1)
    for warning in found.warnings:
        echo(f"warning: {warning}", err=True, fg="yellow")
    for problem in found.errors:
        echo(problem, err=True, fg="red")
    if found.errors:
        ctx.exit(1)
    for note in found.notes:
        echo(note)
    echo(f"{target}: ok – {found.summary}")
