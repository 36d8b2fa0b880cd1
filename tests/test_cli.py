"""The `opsbot` command as a user runs it: a real subprocess, a clean environment, real exit codes."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from opsbot.bot.agent.prompts import CUT_ANSWER, UNCHECKED
from opsbot.bot.cli import main
from opsbot.config.settings import SAMPLE_CONFIG
from tests.fakes.model_server import Call, ModelServer, Reply, script, tool_results

SAMPLE_LOGS = SAMPLE_CONFIG.parent / "logs"


def clean_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "REDIS_URL") and not k.startswith("OPSBOT_")
    }
    env.update(extra)
    return env


def opsbot(*args: str, cwd: Path, stdin: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "opsbot.bot", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=clean_env(**env),
        cwd=cwd,
        timeout=60,
    )


def error_lines(service: str) -> list[str]:
    return [line for line in (SAMPLE_LOGS / f"{service}.log").read_text().splitlines() if " ERROR " in line]


def undated(lines: list[str]) -> list[str]:
    """Lines without their timestamp: without --config the sample's logs are re-dated to end near now."""
    return [line.split(" ", 1)[1] for line in lines]


# ---------------------------------------------------------------- without a model


def test_ask_direct_logs_command_prints_error_lines(tmp_path: Path) -> None:
    done = opsbot("ask", "logs checkout ERROR", cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    printed = [line for line in done.stdout.splitlines() if line.startswith("20")]
    assert printed, done.stdout
    assert all(" ERROR " in line for line in printed)
    assert undated(printed) == undated(error_lines("checkout"))[-len(printed) :]  # the newest ones, newest last
    assert "bundled sample" in done.stderr  # it says which environment it is looking at


def test_ask_question_without_model_says_how_to_configure_one(tmp_path: Path) -> None:
    done = opsbot("ask", "why?", cwd=tmp_path)

    assert done.returncode == 3
    assert "No model is configured" in done.stdout
    assert "OPENAI_API_KEY" in done.stdout
    for command in ("services", "logs <service>", "run <command>", "config <root>"):
        assert command in done.stdout


def test_ask_failing_direct_command_exits_1(tmp_path: Path) -> None:
    done = opsbot("ask", "logs nope", cwd=tmp_path)
    assert done.returncode == 1
    assert "There is no service 'nope'" in done.stdout and "known services: auth, checkout, payments" in done.stdout


def test_chat_runs_direct_commands_from_stdin(tmp_path: Path) -> None:
    done = opsbot("chat", cwd=tmp_path, stdin="services\nlogs nope\nexit\n")

    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "No model is configured" in out
    for name in ("checkout", "payments", "auth", "uptime", "disk-usage"):
        assert name in out
    assert "There is no service 'nope'" in out
    assert "known services: auth, checkout, payments" in out


def test_chat_ends_cleanly_at_end_of_input(tmp_path: Path) -> None:
    done = opsbot("chat", cwd=tmp_path, stdin="services\n")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr


BROKEN = """
model: gpt-4o-mini
loop:
  max_steps: 0
  max_stepz: 3
memory: {window_tokens: 10}
policy:
  services:
    checkout:
      logs: [logs/checkout.log]
      owner: team-a
"""


def test_check_config_prints_every_problem_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "opsbot.yaml"
    path.write_text(textwrap.dedent(BROKEN).lstrip("\n"))

    done = opsbot("check-config", str(path), cwd=tmp_path)

    assert done.returncode == 1
    assert "4 problem(s)" in done.stderr, done.stderr
    assert f"{path}:3: loop.max_steps:" in done.stderr
    assert f"{path}:4: loop: unknown key 'max_stepz'" in done.stderr
    assert f"{path}:5: memory.window_tokens:" in done.stderr
    assert f"{path}:10: policy.services.checkout: unknown key 'owner'" in done.stderr
    assert "ok" not in done.stdout


def test_check_config_reports_a_yaml_syntax_error_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "opsbot.yaml"
    path.write_text("model: x\nloop:\n  max_steps: 3\n   time_budget_s: 4\n")

    done = opsbot("check-config", str(path), cwd=tmp_path)

    assert done.returncode == 1
    assert f"{path}:4:" in done.stderr and "not valid YAML" in done.stderr


def test_check_config_on_the_sample_says_ok(tmp_path: Path) -> None:
    done = opsbot("check-config", str(SAMPLE_CONFIG), cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    assert f"{SAMPLE_CONFIG}: ok" in done.stdout
    assert "3 service(s), 5 command(s), 2 config root(s)" in done.stdout
    assert "warning" not in done.stderr


def test_a_broken_config_stops_ask_with_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "opsbot.yaml"
    path.write_text("loop:\n  max_steps: 0\n")
    done = opsbot("--config", str(path), "ask", "services", cwd=tmp_path)
    assert done.returncode == 2
    assert f"{path}:2" in done.stderr
    assert "check-config" in done.stderr


# ---------------------------------------------------------------- with a scripted model


def why_502(body: dict[str, Any]) -> Reply:
    """Look at checkout's errors once, then answer quoting the newest one."""
    results = tool_results(body)
    if not results:
        return Reply(calls=[Call("query_logs", {"service": "checkout", "level": "ERROR", "limit": 2})])
    newest = results[0]["data"]["lines"].splitlines()[-1]
    return Reply(content=f"checkout returns 502s because payments times out. Newest: {newest}")


@pytest.fixture
def with_model(model_server: Callable[[Any], ModelServer]) -> Callable[[Any], dict[str, str]]:
    def start(policy: Any) -> dict[str, str]:
        server = model_server(policy)
        return {"OPENAI_BASE_URL": server.base_url, "OPSBOT_LLM__MAX_RETRIES": "0"}

    return start


def test_ask_json_reports_text_stop_reason_steps_and_usage(tmp_path: Path, with_model: Any) -> None:
    done = opsbot("--config", str(SAMPLE_CONFIG), "ask", "--json", "why 502?", cwd=tmp_path, **with_model(why_502))

    assert done.returncode == 0, done.stderr
    reply = json.loads(done.stdout)
    assert reply["text"].startswith("checkout returns 502s because payments times out.")
    assert error_lines("checkout")[-1] in reply["text"]  # the model saw the real tool result
    assert reply["stop_reason"] == "answered"
    assert reply["checked"] is True
    tool_steps = [step for step in reply["steps"] if step["calls"]]
    assert len(tool_steps) == 1
    [record] = tool_steps[0]["calls"]
    assert record["tool"] == "query_logs"
    assert record["args"] == {"service": "checkout", "level": "ERROR", "limit": 2}
    assert record["status"] == "ok"
    assert reply["usage"]["prompt_tokens"] > 0
    assert reply["usage"]["model_calls"] == 2


def test_ask_prints_steps_on_stderr_and_the_answer_on_stdout(tmp_path: Path, with_model: Any) -> None:
    done = opsbot("--config", str(SAMPLE_CONFIG), "ask", "why 502?", cwd=tmp_path, **with_model(why_502))

    assert done.returncode == 0, done.stderr
    assert (
        done.stdout.strip()
        == f"checkout returns 502s because payments times out. Newest: {error_lines('checkout')[-1]}"
    )
    step_lines = [line for line in done.stderr.splitlines() if "step 1: query_logs" in line]
    assert step_lines, done.stderr
    finished = [line for line in step_lines if "→" in line]
    assert len(finished) == 1
    assert 'service="checkout"' in finished[0] and 'level="ERROR"' in finished[0] and "limit=2" in finished[0]
    assert "→ ok" in finished[0]


def test_ask_shows_a_failed_step_with_its_error(tmp_path: Path, with_model: Any) -> None:
    def policy(body: dict[str, Any]) -> Reply:
        if not tool_results(body):
            return Reply(calls=[Call("query_logs", {"service": "checkuot"})])
        return Reply(content="no such service")

    done = opsbot("ask", "why 502?", cwd=tmp_path, **with_model(policy))

    assert done.returncode == 0, done.stderr
    assert any(
        "query_logs" in line and "→ not_found" in line and "checkuot" in line for line in done.stderr.splitlines()
    )


def test_ask_exits_3_when_the_model_is_down(tmp_path: Path, with_model: Any) -> None:
    done = opsbot("ask", "why 502?", cwd=tmp_path, **with_model(lambda body: Reply(status=503)))

    assert done.returncode == 3
    assert "model provider is unavailable" in done.stdout


def test_chat_shows_each_step_and_the_answer(tmp_path: Path, with_model: Any) -> None:
    done = opsbot("chat", cwd=tmp_path, stdin="why 502?\nexit\n", **with_model(why_502))

    assert done.returncode == 0, done.stderr
    assert "No model is configured" not in done.stdout
    assert any("step 1: query_logs" in line and "→ ok" in line for line in done.stderr.splitlines()), done.stderr
    assert "opsbot> checkout returns 502s because payments times out." in done.stdout
    assert "answered · 2 step(s) · 2 model call(s)" in done.stdout


@pytest.mark.parametrize(
    "name, value, words",
    [
        ("REDIS_URL", "localhost:6379", "REDIS_URL must look like redis://"),
        ("OPENAI_BASE_URL", "api.local", "https://"),
    ],
)
def test_a_malformed_url_in_the_environment_is_named_not_a_traceback(tmp_path: Path, name, value, words) -> None:
    done = opsbot("ask", "services", cwd=tmp_path, **{name: value})
    assert done.returncode == 2
    assert words in done.stderr and "Traceback" not in done.stderr


# ---------------------------------------------------------------- the answer as it streams


def test_chat_streams_the_answer_once_and_gives_the_time_to_first_token(tmp_path: Path, with_model: Any) -> None:
    done = opsbot("--config", str(SAMPLE_CONFIG), "chat", cwd=tmp_path, stdin="why 502?\nexit\n", **with_model(why_502))

    assert done.returncode == 0, done.stderr
    assert done.stdout.count("checkout returns 502s because payments times out.") == 1, done.stdout
    assert done.stdout.count(error_lines("checkout")[-1]) == 1
    [footer] = [line for line in done.stdout.splitlines() if "answered ·" in line]
    assert re.search(r" · first token \d+ ms · ", footer), footer
    assert UNCHECKED not in done.stdout, "the answer came from a tool result"


def test_chat_says_above_the_footer_when_the_answer_was_not_checked(tmp_path: Path, with_model: Any) -> None:
    done = opsbot("chat", cwd=tmp_path, stdin="is auth ok?\nexit\n", **with_model(lambda body: Reply(content="Yes.")))

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    at = lines.index(UNCHECKED)
    assert "answered ·" in lines[at + 1]
    [answer] = [line for line in lines if "Yes." in line]
    assert answer.endswith("opsbot> Yes.")  # after the prompt for the next question, stdin not echoed


def test_ask_prints_an_unchecked_answer_alone_on_stdout_and_says_so_on_stderr(tmp_path: Path, with_model: Any) -> None:
    done = opsbot("ask", "is auth ok?", cwd=tmp_path, **with_model(lambda body: Reply(content="Yes.\nAll fine.")))

    assert done.returncode == 0, done.stderr
    assert done.stdout == "Yes.\nAll fine.\n"
    assert UNCHECKED in done.stderr


def test_ask_json_says_whether_the_answer_was_checked_and_streams_nothing(tmp_path: Path, with_model: Any) -> None:
    checked = json.loads(opsbot("ask", "--json", "why 502?", cwd=tmp_path, **with_model(why_502)).stdout)
    done = opsbot("ask", "--json", "is auth ok?", cwd=tmp_path, **with_model(lambda body: Reply(content="Yes.")))

    assert checked["checked"] is True
    reply = json.loads(done.stdout)  # the whole of stdout is the JSON document
    assert reply["checked"] is False and reply["text"] == "Yes."
    assert reply["usage"]["first_token_ms"] is not None


def test_thinking_without_its_opening_tag_is_never_printed_and_the_answer_is_printed_once(
    tmp_path: Path, with_model: Any
) -> None:
    thinking = "The user asks about checkout.\nMaybe payments?\n</think>"
    model = with_model(lambda body: Reply(content=f"{thinking}Payments times out.\nRestart it."))

    done = opsbot("chat", cwd=tmp_path, stdin="why 502?\nexit\n", **model)

    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "The user asks about checkout." not in out + done.stderr and "Maybe payments?" not in out + done.stderr
    assert out.count("Payments times out.") == 1 and out.count("Restart it.") == 1, out
    assert "opsbot> Payments times out.\nRestart it.\n" in out


def test_a_cut_answer_streams_once_and_ends_with_the_cut_note(tmp_path: Path, with_model: Any) -> None:
    model = with_model(
        script(
            Reply(content="Checkout fails because", finish_reason="length"),
            Reply(content=" payments times out", finish_reason="length"),
        )
    )

    done = opsbot("ask", "why 502?", cwd=tmp_path, **model)

    assert done.returncode == 0, done.stderr
    assert done.stdout.count("payments times out") == 1, done.stdout
    assert done.stdout.endswith(f"payments times out{CUT_ANSWER}\n")


# ---------------------------------------------------------------- starting fast, saying its version

# What a direct command never needs: each takes tens of milliseconds to a second to import
# (prompt_toolkit and rich's markdown, through markdown_it, are what a chat loads as it starts).
HEAVY = (
    *("openai", "redis", "slack_bolt", "slack_sdk", "waitress", "opentelemetry", "httpx"),
    *("prompt_toolkit", "markdown_it"),
)


def test_a_direct_command_imports_no_model_slack_or_redis_client(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "opsbot.bot", "ask", "services"],
        capture_output=True,
        text=True,
        env=clean_env(),
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    imported = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in done.stderr.splitlines() if "|" in line}
    assert "checkout" in done.stdout and "opsbot" in imported
    assert imported.isdisjoint(HEAVY), sorted(imported & set(HEAVY))


def test_version_is_the_installed_distributions() -> None:
    from importlib.metadata import version

    done = CliRunner().invoke(main, ["--version"])
    assert done.exit_code == 0 and done.output == f"opsbot {version('opsbot')}\n"


# ---------------------------------------------------------------- what a person typed wrong or left out


def cli(*args: str, stdin: str | None = None, **env: str) -> Result:
    """`opsbot` in this process, in the environment `clean_env` gives (no model unless `env` names one)."""
    unset: dict[str, str | None] = {k: None for k in os.environ if k not in clean_env()}
    return CliRunner().invoke(main, list(args), input=stdin, env={**unset, **env}, prog_name="opsbot")


@pytest.fixture
def root_log_level() -> Iterator[None]:
    """`-v` sets the root logger's level, which outlives an in-process run."""
    level = logging.getLogger().level
    yield
    logging.getLogger().setLevel(level)


@pytest.mark.parametrize("args", [("ask", ""), ("ask", "   "), ("ask", "\n\t"), ("ask", "--json", " ")])
def test_an_empty_question_is_refused_in_one_line_and_the_model_never_asked(
    tmp_path: Path, model_server: Callable[[Any], ModelServer], args: tuple[str, ...]
) -> None:
    server = model_server(lambda body: Reply(content="an answer to nothing"))

    done = opsbot(*args, cwd=tmp_path, OPENAI_BASE_URL=server.base_url)

    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == ['opsbot ask needs a question or a direct command, e.g. opsbot ask "services"']
    assert server.requests == []


def test_blank_lines_in_a_chat_prompt_again_and_the_model_is_never_asked(
    tmp_path: Path, model_server: Callable[[Any], ModelServer]
) -> None:
    server = model_server(lambda body: Reply(content="an answer to nothing"))

    done = opsbot("chat", cwd=tmp_path, stdin="\n   \n\t\nexit\n", OPENAI_BASE_URL=server.base_url)

    assert done.returncode == 0, done.stderr
    assert done.stdout.count("you> ") == 4  # the prompt again after each blank line, then `exit`
    assert "opsbot>" not in done.stdout
    assert server.requests == []


SHOP = """
policy:
  services:
    web:
      description: the web tier
      logs: [web.log]
  commands:
    listing:
      description: lists a directory that is not there
      argv: [ls, /nonexistent-opsbot-dir]
      timeout_s: 5
"""


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    """A config of its own, told apart from the sample by its one service, `web`."""
    (tmp_path / "web.log").write_text("2026-11-29T03:00:00Z ERROR web down\n")
    path = tmp_path / "shop.yaml"
    path.write_text(textwrap.dedent(SHOP).lstrip("\n"))
    return path


def test_global_options_after_the_subcommand_work_as_before_it(tmp_path: Path, shop: Path) -> None:
    before = opsbot("--config", str(shop), "ask", "services", cwd=tmp_path)
    after = opsbot("ask", "services", "--config", str(shop), cwd=tmp_path)
    # Typed after the subcommand, it wins over the environment as it does typed before it.
    over_env = opsbot("ask", "services", "--config", str(shop), cwd=tmp_path, OPSBOT_CONFIG=str(SAMPLE_CONFIG))

    assert before.returncode == after.returncode == over_env.returncode == 0, after.stderr
    assert "web: the web tier" in before.stdout and "checkout" not in before.stdout
    assert after.stdout == before.stdout == over_env.stdout


def test_verbose_after_the_subcommand_logs_the_steps(tmp_path: Path, with_model: Any) -> None:
    model = with_model(why_502)
    after = opsbot("--config", str(SAMPLE_CONFIG), "ask", "why 502?", "-v", cwd=tmp_path, **model)
    before = opsbot("-v", "--config", str(SAMPLE_CONFIG), "ask", "why 502?", cwd=tmp_path, **model)
    quiet = opsbot("--config", str(SAMPLE_CONFIG), "ask", "why 502?", cwd=tmp_path, **model)

    def records(stderr: str) -> list[dict[str, Any]]:
        return [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]

    assert after.returncode == before.returncode == 0, after.stderr
    assert records(after.stderr) and len(records(after.stderr)) == len(records(before.stderr))
    assert records(quiet.stderr) == []


# Every subcommand, with what it needs to reach its config; a new one must be added here.
SUBCOMMANDS = {
    "ask": ["services"],
    "audit": [],
    "chat": [],
    "check-config": [],
    "eval": [],
    "mcp-serve": [],
    "serve": [],
    "history": ["pool"],
    "handoff": [],
}


def test_every_subcommand_is_tested_for_the_global_options() -> None:
    assert set(SUBCOMMANDS) == set(main.commands)


@pytest.mark.parametrize("where", ["before", "after"])
@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_every_subcommand_takes_the_global_options_before_and_after_it(
    tmp_path: Path, name: str, where: str, root_log_level: None
) -> None:
    broken = tmp_path / "opsbot.yaml"
    broken.write_text("loop:\n  max_steps: 0\n")
    options = ["--config", str(broken), "-v"]
    args = [*options, name, *SUBCOMMANDS[name]] if where == "before" else [name, *SUBCOMMANDS[name], *options]

    done = cli(*args, stdin="")

    assert done.exit_code == (1 if name == "check-config" else 2), done.output
    assert f"{broken}:2: loop.max_steps" in done.stderr  # the file named, wherever it was named, was read
    assert cli(name, "--version").stdout == cli("--version").stdout != ""


@pytest.mark.parametrize(
    "args, usage, problem",
    [
        (["ask", "--nope", "x"], "opsbot ask [OPTIONS] QUESTION", "Error: No such option '--nope'"),
        (["ask"], "opsbot ask [OPTIONS] QUESTION", "Error: Missing argument 'QUESTION'."),
        (["chat", "extra"], "opsbot chat [OPTIONS]", "Error: Got unexpected extra argument (extra)"),
        (["nope"], "opsbot [OPTIONS] COMMAND [ARGS]...", "Error: No such command 'nope'."),
        (["--nope"], "opsbot [OPTIONS] COMMAND [ARGS]...", "Error: No such option '--nope'"),
        ([], "opsbot [OPTIONS] COMMAND [ARGS]...", "Error: Missing command: one of ask, audit, chat, check-config, "),
    ],
)
def test_a_usage_error_is_the_usage_line_what_is_wrong_and_where_the_help_is(
    args: list[str], usage: str, problem: str
) -> None:
    done = cli(*args)

    assert done.exit_code == 2
    assert done.stdout == ""
    [shown_usage, shown_problem, pointer] = done.stderr.splitlines()  # never the whole help
    assert shown_usage == f"Usage: {usage}"
    assert shown_problem.startswith(problem), shown_problem
    assert pointer == f"Try '{usage.split(' [')[0]} --help' for help."


# ---------------------------------------------------------------- direct commands, for people

SAMPLE_CONFIGS = SAMPLE_CONFIG.parent / "configs"


def ask_sample(command: str, *options: str) -> Result:
    return cli("--config", str(SAMPLE_CONFIG), "ask", command, *options)


@pytest.mark.parametrize(
    "command, shown",
    [
        ("config checkout checkout.yaml", (SAMPLE_CONFIGS / "checkout.yaml").read_text()),
        ("config checkout/checkout.yaml", (SAMPLE_CONFIGS / "checkout.yaml").read_text()),
        ("config checkout checkout.yaml http.port", "8080\n"),
        ("config checkout checkout.yaml upstreams.payments.url", "https://payments.internal:8443\n"),
        ("config checkout checkout.yaml feature_flags", "one_click_checkout: true\n"),
        ("config payments", (SAMPLE_CONFIGS / "payments.yaml").read_text()),
        ("config payments payments.yaml", (SAMPLE_CONFIGS / "payments.yaml").read_text()),
        ("config payments db.primary.pool_size", "5\n"),
        ("config payments payments.yaml db.primary.host", "pg-primary.internal\n"),
    ],
)
def test_config_reads_the_file_or_the_value_named(command: str, shown: str) -> None:
    done = ask_sample(command)
    assert done.exit_code == 0, done.output
    assert done.stdout == shown


def test_config_with_only_a_root_lists_what_is_there() -> None:
    done = ask_sample("config checkout")
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines() == [
        "checkout.yaml",
        "withheld:",
        "  checkout-tls.pem: never read (matches '*.pem')",
        "  checkout.env: never read (matches '*.env')",
    ]


@pytest.mark.parametrize(
    "command, refusal",
    [
        ("config checkout ../opsbot.yaml", "✗ denied: '..' is not allowed in a path"),
        ("config checkout /etc/passwd", "✗ denied: absolute and home paths are not accepted"),
        ("config checkout/../../opsbot.yaml", "✗ denied: '..' is not allowed in a path"),
        ("config checkout checkout.env", "✗ denied: 'checkout.env' is never read: it matches '*.env'"),
        ("config checkout nope.yaml", "✗ not found: config root 'checkout' has no readable file 'nope.yaml'"),
        ("config checkout checkout.yaml nope", "✗ not found: 'checkout.yaml' has no key 'nope'"),
        ("config nope", "There is no config root 'nope'. Usage: config <root> [file] [key.path]; known config roots"),
        ("config payments db extra", "Usage: config <root> [file] [key.path]; config root payments takes one key"),
        ("config checkout a b c", "Usage: config <root> [file] [key.path]; config root checkout takes a file in it"),
    ],
)
def test_config_refusals_are_a_line_with_what_to_do_and_exit_1(command: str, refusal: str) -> None:
    done = ask_sample(command)

    assert done.exit_code == 1
    [said, *next_step] = done.stdout.splitlines()
    assert said.startswith(refusal), said
    assert len(next_step) <= 1  # what to do next, never the whole list of direct commands
    for model_words in ("read_config", "tell the user", "The reason above says who may"):
        assert model_words not in done.stdout


# What query_logs gives the model beside the lines, and where it read them: the host's business.
LOG_FIELDS = ("service:", "summary:", "matches:", "complete:", "shown:", "lines:", "files:", "checkout.log")


@pytest.mark.parametrize(
    "command, first, absent",
    [
        ("services", "services:", ("config_files", "name:", "about:")),
        ("logs checkout ERROR", "38 matching lines (newest last); read 24 KB of 1 file", LOG_FIELDS),
        ("logs checkout nothing-like-this", "no matching lines; read 24 KB of 1 file", LOG_FIELDS),
        ("run uptime", None, ("command:", "argv", "exit_code", "output:", "/usr/bin")),
        ("config checkout", "checkout.yaml", ("name:", "path:", "files:", "format:")),
        ("config payments db.primary.pool_size", "5", ("value:", "key:", "format:")),
        ("runbook list", "config-drift: check payments' database pool against its reviewed size (20)", ("runbooks:",)),
        (
            "runbook show config-drift",
            "check payments' database pool against its reviewed size (20)",
            ("name: config",),
        ),
    ],
)
def test_direct_commands_print_what_a_person_needs_without_fields_or_host_paths(
    tmp_path: Path, command: str, first: str | None, absent: tuple[str, ...]
) -> None:
    cache = tmp_path / "cache"
    done = cli("ask", command, XDG_CACHE_HOME=str(cache))  # the re-dated sample, as a first start renders it

    assert done.exit_code == 0, done.output
    if first is not None:
        assert done.stdout.splitlines()[0] == first
    for field in absent:
        assert field not in done.stdout, field
    assert str(cache) not in done.output and (cache / "opsbot" / "sample").is_dir()


def test_services_names_each_kind_once(tmp_path: Path) -> None:
    done = ask_sample("services")
    titles = [line for line in done.stdout.splitlines() if not line.startswith("  ")]
    assert titles == ["services:", "commands:", "config roots:"]


def test_a_failing_command_says_its_exit_code_under_its_output(tmp_path: Path, shop: Path) -> None:
    done = cli("--config", str(shop), "ask", "run listing")
    assert done.exit_code == 0, done.output  # the command ran; what it printed says why it failed
    lines = done.stdout.splitlines()
    assert "/nonexistent-opsbot-dir" in lines[0] and lines[-1] == "(exit code 2)"


def test_json_keeps_the_tools_whole_result(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    done = cli("ask", "--json", "logs checkout ERROR", XDG_CACHE_HOME=str(cache))

    assert done.exit_code == 0, done.output
    shown = json.loads(done.stdout)
    assert shown["ok"] is True and shown["tool"] == "query_logs"
    assert shown["text"].startswith("38 matching lines")
    data = shown["result"]["data"]
    assert data["service"] == "checkout" and data["matches"] == 38 and data["shown"] == 38
    assert [Path(f).name for f in data["files"]] == ["checkout.log"] and str(cache) in data["files"][0]
