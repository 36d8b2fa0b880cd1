"""The `opsbot` command: chat in a terminal, ask one question, check a config file."""

from __future__ import annotations

import getpass
import json
import logging
import sys
import time
from datetime import UTC
from pathlib import Path
from typing import Any

import click
from pydantic import ValidationError

from bot.answer_stream import AnswerPreview
from bot.build import build_agent
from bot.commands import Question, decide, run_command
from bot.local_approvals import TerminalApprovals
from bot.loop import Agent
from bot.prompts import UNCHECKED, no_model_text
from bot.reply import Progress, Reply, Step
from bot.version import VERSION
from config.check import ConfigError
from config.policy import Principal
from config.runbooks import load_runbooks
from config.sample_env import prepare_sample
from config.settings import SAMPLE_CONFIG, Settings, load_file_config
from tools.base import CallStatus, ToolResult
from tools.catalog import runbook_arg_problems
from tools.logs import log_files
from tools.logs.time import TIME_HINT, time_arg

# The terminal's user is whoever runs the process: the OS account is the identity policy sees.
TERMINAL_USER = Principal(platform="cli", user=getpass.getuser())

EXIT_CONFIG = 2
EXIT_NO_ANSWER = 3

THINKING_NOTE = "  (the lines above were the model's thinking, not its answer)"


class TerminalProgress(Progress):
    """Each step as one line on `stream`; the answer's lines on `answer_stream` as the model writes them."""

    def __init__(self, stream: Any, answer_stream: Any, prompt: str = "", color: str | None = None) -> None:
        self.stream = stream
        self.answer_stream = answer_stream
        self.prompt = prompt
        self.color = color
        self.preview = AnswerPreview()
        self.mid_line = False  # the answer's last streamed line is not finished

    def on_tool_start(self, step: int, tool: str, args: Any) -> None:
        self._end_line()
        click.secho(f"  … step {step}: {tool} {_args(args)}", fg="bright_black", file=self.stream)

    def on_step(self, step: Step) -> None:
        if step.calls:
            self.preview.clear()
        if step.calls or step.note:
            self._end_line()  # only then: a cut answer's continuation goes on on the same line
        for call in step.calls:
            mark = "✓" if call.status is CallStatus.ok else "✗"
            detail = f" – {call.error}" if call.error else ""
            click.secho(
                f"  {mark} step {step.n}: {call.tool} {_args(call.args)} → {call.status} "
                f"({call.duration_ms:.0f} ms){detail}",
                fg="green" if call.status is CallStatus.ok else "yellow",
                file=self.stream,
            )
        if step.note:
            click.secho(f"  ! {step.note}", fg="yellow", file=self.stream)

    def on_answer_text(self, step: int, text: str) -> None:
        if not self.preview.text:
            click.secho(self.prompt, fg=self.color, nl=False, file=self.answer_stream)
        click.secho(text, fg=self.color, nl=False, file=self.answer_stream)
        self.preview.add(step, text)
        self.mid_line = not text.endswith("\n")

    def on_answer_reset(self, step: int) -> None:
        if self.preview.drop(step):
            self._end_line()
            click.secho(THINKING_NOTE, fg="bright_black", file=self.answer_stream)

    def finish(self, answer: str, color: str | None) -> None:
        """Print what `answer` adds to what streamed of it; all of it when none of it streamed."""
        # Printed lines cannot be taken back: a continuation that lost its space is still the answer.
        rest = self.preview.rest(answer) if self.preview.text else None
        if rest is None:
            self._end_line()
            click.secho(f"{self.prompt}{answer}", fg=color, file=self.answer_stream)
        elif rest or self.mid_line:
            click.secho(rest, fg=color, file=self.answer_stream)
        self.mid_line = False

    def _end_line(self) -> None:
        """Finish a streamed line before anything else is printed, on either stream."""
        if self.mid_line:
            click.echo(file=self.answer_stream)
            self.mid_line = False


def _args(args: Any) -> str:
    if isinstance(args, dict):
        return "(" + ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items()) + ")"
    return repr(args)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(VERSION, "--version", prog_name="opsbot", message="%(prog)s %(version)s")
@click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path, dir_okay=False),
    envvar="OPSBOT_CONFIG",
    help="YAML config file (default: $OPSBOT_CONFIG, else the bundled sample environment).",
)
@click.option("-v", "--verbose", is_flag=True, help="Log every step as a JSON record on stderr.")
@click.pass_context
def main(ctx: click.Context, config_path: Path | None, verbose: bool) -> None:
    """opsbot: an on-call assistant that shows every step it takes."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(message)s", stream=sys.stderr)
    ctx.obj = config_path


def _settings(ctx: click.Context) -> Settings:
    path: Path | None = ctx.obj
    if path is None:
        # A copy whose logs end a few minutes ago, so `logs checkout ERROR since=2h` finds what README says.
        path = prepare_sample(SAMPLE_CONFIG, VERSION)
        redated = f"; its logs re-dated to end now, in {path.parent}" if path != SAMPLE_CONFIG else ""
        click.secho(
            f"Using the bundled sample environment ({SAMPLE_CONFIG}{redated}); set OPSBOT_CONFIG for yours.",
            fg="bright_black",
            err=True,
        )
    try:
        return Settings.load(path)
    except ConfigError as exc:
        click.secho(str(exc), fg="red", err=True)
        click.echo(f"Fix the file, then check it with: opsbot --config {path} check-config", err=True)
        raise click.exceptions.Exit(EXIT_CONFIG) from exc
    except ValidationError as exc:
        for line in _environment_problems(exc):
            click.secho(line, fg="red", err=True)
        raise click.exceptions.Exit(EXIT_CONFIG) from exc


def _environment_problems(exc: ValidationError) -> list[str]:
    return [f"environment: {'.'.join(str(p) for p in e['loc']) or 'settings'}: {e['msg']}" for e in exc.errors()]


@main.command()
@click.option("--thread", default="cli:default", show_default=True, help="Conversation to continue.")
@click.pass_context
def chat(ctx: click.Context, thread: str) -> None:
    """Talk to opsbot in this terminal. Each step is shown as it happens."""
    settings = _settings(ctx)
    agent = build_agent(settings)
    click.secho(
        f"opsbot · model {settings.model if agent.model else '(none)'} · memory: "
        f"{agent.memory.describe()} · thread {thread}",
        bold=True,
    )
    if agent.model is None:
        click.secho(no_model_text(), fg="yellow")
    # The model is told an approval's outcome as the next turn of the same thread.
    approvals = TerminalApprovals(
        settings.policy,
        TERMINAL_USER,
        thread,
        lambda outcome: _ask_and_offer(agent, approvals, outcome, thread, sys.stdout),
        sys.stdout,
        audit=agent.audit,
    )
    click.echo("Type a question, `help` for direct commands, `exit` to leave.")
    while True:
        try:
            text = click.prompt("you", prompt_suffix="> ", default="", show_default=False).strip()
        except (EOFError, click.Abort):
            click.echo()
            return
        if text.lower() in ("exit", "quit"):
            return
        if text:
            _answer(agent, approvals, text, thread, sys.stdout)


def _answer(agent: Agent, approvals: TerminalApprovals, text: str, thread: str, stream: Any) -> None:
    """A direct command or a question, answered; a write command it asks for is offered for approval."""
    decision = decide(approvals.approvals.policy, text, can_ask=agent.model is not None)
    if not isinstance(decision, Question):
        output = run_command(agent, decision, thread, TERMINAL_USER)
        click.echo(output.text, file=stream)
        if output.approval is not None:
            approvals.offer(output.approval, text, continues_agent=False)
        return
    _ask_and_offer(agent, approvals, text, thread, stream)


def _ask_and_offer(agent: Agent, approvals: TerminalApprovals, text: str, thread: str, stream: Any) -> None:
    reply = _ask_agent(agent, text, thread, stream)
    for request in reply.approvals:
        approvals.offer(request, text, continues_agent=True)


def _ask_agent(agent: Agent, text: str, thread: str, stream: Any) -> Reply:
    progress = TerminalProgress(sys.stderr, stream, prompt="opsbot> ", color="cyan")
    reply = agent.run(text, thread=thread, progress=progress, principal=TERMINAL_USER)
    progress.finish(reply.text, "cyan" if reply.stop_reason == "answered" else "yellow")
    if not reply.checked:
        click.secho(UNCHECKED, fg="yellow", file=stream)
    click.secho(f"  ({_footer(reply)})", fg="bright_black", file=stream)
    return reply


def _footer(reply: Reply) -> str:
    usage = reply.usage
    first = f" · first token {usage.first_token_ms:.0f} ms" if usage.first_token_ms is not None else ""
    return (
        f"{reply.stop_reason.value} · {len(reply.steps)} step(s) · {usage.model_calls} model call(s) · "
        f"{usage.prompt_tokens + usage.completion_tokens} tokens{first} · {reply.duration_s:.1f}s"
    )


@main.command()
@click.argument("question")
@click.option("--thread", default="cli:default", show_default=True, help="Conversation to continue.")
@click.option("--json", "as_json", is_flag=True, help="Print text, stop reason, checked, steps and usage as JSON.")
@click.pass_context
def ask(ctx: click.Context, question: str, thread: str, as_json: bool) -> None:
    """Ask one question (or run one direct command) and print the answer."""
    settings = _settings(ctx)
    agent = build_agent(settings)
    decision = decide(settings.policy, question, can_ask=agent.model is not None)
    if not isinstance(decision, Question):
        output = run_command(agent, decision, thread, TERMINAL_USER)
        click.echo(json.dumps({"text": output.text, "ok": output.ok}) if as_json else output.text)
        ctx.exit(0 if output.ok else 1)
    if as_json:
        # Nothing streams: stdout is one JSON document (`checked` says whether tools backed the answer).
        reply = agent.run(question, thread=thread, progress=Progress(), principal=TERMINAL_USER)
        click.echo(reply.model_dump_json(indent=2))
    else:
        progress = TerminalProgress(sys.stderr, sys.stdout)
        reply = agent.run(question, thread=thread, progress=progress, principal=TERMINAL_USER)
        progress.finish(reply.text, None)
        if not reply.checked:
            # Beside the steps on stderr: stdout stays the answer alone, for whoever pipes it.
            click.secho(UNCHECKED, fg="yellow", err=True)
    if reply.stop_reason in ("no_model", "no_answer", "llm_unavailable", "memory_unavailable", "busy"):
        ctx.exit(EXIT_NO_ANSWER)


@main.command()
@click.option("--http", "http", is_flag=True, help="Serve the Events API over HTTP on $PORT instead of Socket Mode.")
@click.option("--port", envvar="PORT", default=3000, show_default=True, help="HTTP port (with --http).")
@click.pass_context
def serve(ctx: click.Context, http: bool, port: int) -> None:
    """Serve Slack: Socket Mode (SLACK_APP_TOKEN), or HTTP with --http (SLACK_SIGNING_SECRET)."""
    from bot.slack.app import SlackApp, StartupError
    from bot.slack.serving import serve_slack

    settings = _settings(ctx)
    logging.getLogger("opsbot").setLevel(logging.INFO)

    def started(slack: SlackApp) -> None:
        where = f"HTTP on port {port}" if http else "Socket Mode"
        click.secho(f"opsbot {VERSION} serving Slack as {slack.identity.user_id} ({where})", err=True)

    try:
        serve_slack(settings, http, port, started)
    except StartupError as exc:
        click.secho(f"opsbot cannot start: {exc}", fg="red", err=True)
        raise click.exceptions.Exit(EXIT_CONFIG) from exc


@main.command()
@click.option("--since", default="24h", show_default=True, help="How far back: 15m, 2h, 1d, or an ISO-8601 time.")
@click.option("--thread", default=None, help="Only this thread's records (its key, as the records show it).")
@click.option("--json", "as_json", is_flag=True, help="One JSON record per line.")
@click.pass_context
def audit(ctx: click.Context, since: str, thread: str | None, as_json: bool) -> None:
    """Read back the audit trail kept in Redis: tool calls, approvals and write commands."""
    settings = _settings(ctx)
    if not settings.redis_url:
        click.secho(
            "The audit trail is kept in Redis: set REDIS_URL to the Redis opsbot serves Slack with. "
            "Without Redis, records are only on the opsbot.audit logger (opsbot -v).",
            fg="red",
            err=True,
        )
        ctx.exit(EXIT_CONFIG)
    start = time_arg("--since", since, UTC, time.time())
    if isinstance(start, ToolResult):
        raise click.BadParameter(TIME_HINT, param_hint="--since")
    from bot.audit import RedisAudit
    from bot.redis_client import REDIS_ERRORS, connect, describe

    try:
        entries = list(RedisAudit(connect(settings.redis_url), settings.audit.ttl_s).read(start, thread))
    except REDIS_ERRORS as exc:
        click.secho(f"Cannot read the audit trail from {describe(settings.redis_url)}: {exc}", fg="red", err=True)
        ctx.exit(1)
    for entry in entries:
        click.echo(entry.model_dump_json(exclude_none=True) if as_json else entry.line())
    if not entries and not as_json:
        click.secho(f"No audit records since {since}{f' in thread {thread}' if thread else ''}.", err=True)


@main.command("check-config")
@click.argument("path", required=False, type=click.Path(path_type=Path, dir_okay=False))
@click.pass_context
def check_config(ctx: click.Context, path: Path | None) -> None:
    """Validate a YAML config file and print every problem with its line."""
    target = path or ctx.obj
    if target is None:
        raise click.UsageError("name a file: opsbot check-config PATH (or set OPSBOT_CONFIG)")
    try:
        config = load_file_config(target)
    except ConfigError as exc:
        click.secho(str(exc), fg="red", err=True)
        ctx.exit(1)
    policy = config.policy.resolved(target.resolve().parent)
    missing = [
        f"service {name}: {problem}"
        for name, service in policy.services.items()
        for problem in log_files(service.logs)[1]
    ]
    for warning in missing:
        click.secho(f"warning: {warning}", fg="yellow", err=True)
    try:
        runbooks = {**policy.runbooks, **(load_runbooks(policy.runbooks_dir, policy) if policy.runbooks_dir else {})}
    except ConfigError as exc:
        click.secho(str(exc), fg="red", err=True)
        ctx.exit(1)
    # Only the tools know their arguments, so this is checked here rather than when the files load.
    problems = runbook_arg_problems(policy.model_copy(update={"runbooks": runbooks}))
    try:
        Settings()  # the environment (REDIS_URL, tokens, endpoints) as chat, ask and serve read it
    except ValidationError as exc:
        problems += _environment_problems(exc)
    for problem in problems:
        click.secho(problem, fg="red", err=True)
    if problems:
        ctx.exit(1)
    click.echo(
        f"{target}: ok – {len(policy.services)} service(s), {len(policy.commands)} command(s), "
        f"{len(policy.config_files)} config root(s), {len(runbooks)} runbook(s)"
    )
