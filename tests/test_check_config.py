"""`opsbot check-config` as a user runs it (a real subprocess unless said otherwise).

Each config below loads, so chat and serve start with it, and then fails when a tool uses it;
each test shows that failure (a direct command, which needs no model) and then the line
check-config prints for it, with the file and line to fix. Errors exit 1; warnings are printed
and exit 0. Then: the model endpoint, asked only with `--model`; and configuration errors in
plain words, from a corpus of broken files (tests/fixtures/broken_configs) each holding the
exact lines check-config prints for it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from opsbot.bot.cli import main
from opsbot.tools import runner
from tests.fakes.model_server import ModelServer, Reply
from tests.test_cli import clean_env, opsbot

BROKEN_CONFIGS = Path(__file__).parent / "fixtures" / "broken_configs"


def config(tmp_path: Path, policy: str, top: str = "") -> Path:
    """opsbot.yaml in `tmp_path`: `top`, then `policy` under `policy:`."""
    path = tmp_path / "opsbot.yaml"
    path.write_text(top + "policy:\n" + textwrap.indent(textwrap.dedent(policy).lstrip("\n"), "  "))
    return path


def line_of(path: Path, snippet: str) -> int:
    hits = [n for n, line in enumerate(path.read_text().splitlines(), 1) if snippet in line]
    assert len(hits) == 1, f"{snippet!r} is on lines {hits}"
    return hits[0]


def check(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return opsbot("check-config", "opsbot.yaml", *args, cwd=tmp_path, **env)


def said(done: subprocess.CompletedProcess[str]) -> list[str]:
    return done.stderr.splitlines()


def used(tmp_path: Path, question: str) -> str:
    """What a direct command says with this config: the run-time failure check-config foresees."""
    done = opsbot("--config", "opsbot.yaml", "ask", question, cwd=tmp_path)
    assert done.returncode == 1, (done.stdout, done.stderr)
    return done.stdout + done.stderr


# ---------------------------------------------------------------- what this host lacks


def test_a_config_root_that_is_not_on_this_host_is_an_error(tmp_path: Path) -> None:
    path = config(tmp_path, f"config_files:\n  nginx:\n    path: {tmp_path / 'etc' / 'nginx'}\n")

    # The tool's own hint has sent people to check-config all along; now check-config knows.
    assert "the operator's path for it does not exist on this host (opsbot check-config)" in used(
        tmp_path, "config nginx"
    )
    done = check(tmp_path)

    assert done.returncode == 1
    assert said(done) == [
        f"opsbot.yaml:{line_of(path, 'path:')}: policy.config_files.nginx.path: {tmp_path / 'etc' / 'nginx'} "
        "does not exist on this host, so read_config cannot read config root 'nginx'"
    ]
    assert ": ok" not in done.stdout


def test_a_file_root_that_is_a_link_it_does_not_follow_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "real.yaml").write_text("pool: 20\n")
    (tmp_path / "app.yaml").symlink_to(tmp_path / "real.yaml")
    # Written absolute: a relative path is resolved, links and all, when the file loads.
    path = config(tmp_path, f"config_files:\n  app:\n    path: {tmp_path / 'app.yaml'}\n")

    assert "is a symbolic link, and this root does not follow links" in used(tmp_path, "config app")
    done = check(tmp_path)

    assert done.returncode == 1
    assert said(done) == [
        f"opsbot.yaml:{line_of(path, 'path:')}: policy.config_files.app.path: {tmp_path / 'app.yaml'} is a "
        "symbolic link, which this root does not follow: set follow_symlinks: true, or name the file it points to"
    ]


def test_a_program_that_is_not_installed_is_an_error(tmp_path: Path) -> None:
    path = config(
        tmp_path,
        """
        commands:
          ghost:
            description: a program this host does not have
            argv: [no-such-program-xyz, --version]
          script:
            description: a script that is not there
            argv: [scripts/check.sh]
        """,
    )

    assert "'no-such-program-xyz', the program of command 'ghost', is not installed" in used(tmp_path, "run ghost")
    assert "the program of command 'script', is not installed" in used(tmp_path, "run script")
    done = check(tmp_path)

    assert done.returncode == 1
    assert said(done) == [
        f"opsbot.yaml:{line_of(path, 'no-such-program-xyz')}: policy.commands.ghost.argv[0]: program "
        f"'no-such-program-xyz' is not installed on this host (looked for on {runner.SYSTEM_PATH}), so command "
        "'ghost' cannot run",
        f"opsbot.yaml:{line_of(path, 'check.sh')}: policy.commands.script.argv[0]: "
        f"{tmp_path / 'scripts' / 'check.sh'} is not an executable file, so command 'script' cannot run",
    ]


def test_journalctl_and_programs_are_looked_for_where_the_runner_looks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # In process: the runner's fixed search path, pointed at an empty directory, is a host without them.
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setattr(runner, "SYSTEM_PATH", str(empty))
    path = tmp_path / "opsbot.yaml"
    path.write_text(
        "policy:\n  services:\n    nginx:\n      journald: [nginx.service]\n"
        "  commands:\n    uptime:\n      description: uptime of the host\n      argv: [uptime]\n"
    )
    for name in list(os.environ):
        if name.startswith("OPSBOT_") or name in ("REDIS_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
            monkeypatch.delenv(name)

    done = CliRunner().invoke(main, ["check-config", str(path)])

    assert done.exit_code == 1
    assert done.stderr.splitlines() == [
        f"{path}:{line_of(path, 'journald:')}: policy.services.nginx.journald: journalctl is not installed on this "
        f"host (looked for on {empty}), so these units cannot be read",
        f"{path}:{line_of(path, 'argv: [uptime]')}: policy.commands.uptime.argv[0]: program 'uptime' is not "
        f"installed on this host (looked for on {empty}), so command 'uptime' cannot run",
    ]


# ---------------------------------------------------------------- log commands


POD_LOGS = """
services:
  pods:
    log_command: pod-logs
commands:
  pod-logs:
    description: logs of the pods
    argv: [/bin/echo, "{slot}"]
    params:
      {param}
"""


@pytest.mark.parametrize(
    ("slot", "param", "question", "at_run_time", "problem"),
    [
        pytest.param(
            "--since={since}",
            'since: {pattern: "[0-9]+s"}',
            "logs pods",
            "missing parameter 'since'",
            'since has no default, so every query that gives no since fails; give it one, e.g. default: "86400s"',
            id="since-without-a-default",
        ),
        pytest.param(
            "--since={since}",
            'since: {pattern: "[0-9]+[mh]", default: "1h"}',
            "logs pods since=2h",
            "'7200s' does not match the pattern [0-9]+[mh]",
            "since refuses what query_logs fills it with, whole seconds and an s as kubectl's --since reads "
            "('7200s' does not match the pattern [0-9]+[mh]), so a query that gives since fails",
            id="since-refusing-seconds",
        ),
        pytest.param(
            "--tail={lines}",
            'lines: {enum: ["100"], default: "100"}',
            "logs pods",
            "'10000' is not one of the allowed values",
            "lines is not an integer range, but query_logs fills it with a count of lines up to its max: declare it "
            "with min and max",
            id="lines-not-a-range",
        ),
    ],
)
def test_a_log_command_query_logs_cannot_fill_is_an_error(
    tmp_path: Path, slot: str, param: str, question: str, at_run_time: str, problem: str
) -> None:
    path = config(tmp_path, POD_LOGS.replace("{slot}", slot).replace("{param}", param))
    name = param.split(":")[0]

    assert at_run_time in used(tmp_path, question)
    done = check(tmp_path)

    assert done.returncode == 1
    assert said(done) == [
        f"opsbot.yaml:{line_of(path, name + ': {')}: policy.commands.pod-logs.params.{name}: the log command of "
        f"pods: {problem}"
    ]


# ---------------------------------------------------------------- runbooks


def test_a_runbook_in_the_policy_naming_what_it_does_not_declare_is_an_error(tmp_path: Path) -> None:
    path = config(
        tmp_path,
        """
        services:
          shop:
            journald: [shop.service]
        runbooks:
          recover:
            id: recover
            description: restart what is erroring
            params:
              service: {enum: [shop, billing], default: shop}
            steps:
              - id: look
                tool: query_logs
                args: {service: "{params.service}"}
              - id: fix
                tool: run_command
                args: {command: reboot}
        """,
    )

    # It loads, so chat and serve offer it; its steps would fail only when it runs.
    shown = opsbot("--config", "opsbot.yaml", "ask", "runbook show recover", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    done = check(tmp_path)

    assert done.returncode == 1
    assert said(done) == [
        f"opsbot.yaml:{line_of(path, '{params.service}')}: policy.runbooks.recover.steps[0].args.service: "
        "parameter 'service' may be 'billing', which is not declared (declared: shop)",
        f"opsbot.yaml:{line_of(path, 'reboot')}: policy.runbooks.recover.steps[1].args.command: command 'reboot' "
        "is not declared (declared: none)",
    ]


def test_a_runbook_step_without_a_required_command_parameter_is_refused_with_its_line(tmp_path: Path) -> None:
    config(
        tmp_path,
        """
        commands:
          journal:
            description: recent lines of one unit
            argv: [journalctl, -u, "{unit}"]
            params:
              unit: {enum: [nginx.service]}
        runbooks_dir: runbooks
        """,
    )
    (tmp_path / "runbooks").mkdir()
    runbook = tmp_path / "runbooks" / "look.yaml"
    runbook.write_text(
        "id: look\ndescription: the journal\nsteps:\n  - id: journal\n    tool: run_command\n"
        "    args: {command: journal}\n"
    )

    done = check(tmp_path)

    # Refused where it loads, like every other reference a runbook makes to the policy: chat and serve too.
    assert done.returncode == 1
    assert said(done) == [
        f"{tmp_path / 'runbooks'}: 1 problem(s)",
        f"  {runbook}:{line_of(runbook, 'args:')}: steps[0].args.params: 'journal' needs parameter 'unit' (one of "
        "nginx.service), which has no default",
    ]
    assert opsbot("--config", "opsbot.yaml", "ask", "runbook list", cwd=tmp_path).returncode == 2


# ---------------------------------------------------------------- log files: warnings


def test_logs_that_are_not_there_yet_are_warnings(tmp_path: Path) -> None:
    path = config(
        tmp_path,
        """
        services:
          web:
            logs: [/var/log/opsbot-test-nosuchdir/*.log, logs/web-*.log]
        """,
    )

    (tmp_path / "logs").mkdir()
    done = check(tmp_path)

    assert done.returncode == 0, done.stderr
    line = line_of(path, "web-*.log")
    assert said(done) == [
        f"warning: opsbot.yaml:{line}: policy.services.web.logs[0]: directory /var/log/opsbot-test-nosuchdir does "
        "not exist: a wrong path, or one its service has not created yet",
        f"warning: opsbot.yaml:{line}: policy.services.web.logs[1]: {tmp_path / 'logs' / 'web-*.log'} matches no file",
    ]
    assert done.stdout.startswith("opsbot.yaml: ok")


# ---------------------------------------------------------------- the model, with --model


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def no_completion(body: object) -> Reply:
    raise AssertionError("check-config asked for a completion")


def test_the_model_is_asked_only_with_model_and_then_without_a_completion(tmp_path: Path) -> None:
    config(tmp_path, "{}\n", top="model: gpt-4o-mini\n")
    with ModelServer(no_completion, models=["gpt-4o-mini", "text-embedding-3-small"]) as server:
        plain = check(tmp_path, OPENAI_BASE_URL=server.base_url)
        assert server.listings == 0
        asked = check(tmp_path, "--model", OPENAI_BASE_URL=server.base_url)

    assert plain.returncode == 0 and asked.returncode == 0, asked.stderr
    assert asked.stdout.splitlines()[0] == f"model: {server.base_url} serves model 'gpt-4o-mini'"
    assert server.listings == 1 and server.requests == []


def test_a_model_the_server_serves_under_another_name_is_an_error_at_its_line(tmp_path: Path) -> None:
    config(tmp_path, "{}\n", top="model: llama3.1\n")
    with ModelServer(no_completion, models=["qwen2.5:7b", "llama3.1:8b-instruct-q4_K_M"]) as server:
        done = check(tmp_path, "--model", OPENAI_BASE_URL=server.base_url)

    assert done.returncode == 1
    assert said(done) == [
        f"opsbot.yaml:1: model: {server.base_url} does not serve model 'llama3.1' (it serves "
        "llama3.1:8b-instruct-q4_K_M, qwen2.5:7b); did you mean 'llama3.1:8b-instruct-q4_K_M'? Set OPSBOT_MODEL to it"
    ]


def test_a_model_named_in_the_environment_is_reported_without_a_line(tmp_path: Path) -> None:
    config(tmp_path, "{}\n")
    with ModelServer(no_completion, models=["qwen2.5:7b"]) as server:
        done = check(tmp_path, "--model", OPENAI_BASE_URL=server.base_url, OPSBOT_MODEL="gpt-4o")

    assert done.returncode == 1
    assert said(done) == [
        f"model: {server.base_url} does not serve model 'gpt-4o' (it serves qwen2.5:7b); "
        "set OPSBOT_MODEL to one the server serves"
    ]


def test_an_endpoint_that_cannot_be_reached_is_an_error_of_its_own(tmp_path: Path) -> None:
    config(tmp_path, "{}\n", top="llm: {max_retries: 0}\n")
    url = f"http://127.0.0.1:{closed_port()}/v1"

    done = check(tmp_path, "--model", OPENAI_BASE_URL=url)

    assert done.returncode == 1
    assert said(done) == [
        f"model: cannot connect to {url} (connection refused); set OPENAI_BASE_URL to the model server's "
        "address (http://host:port/v1) and check that it runs"
    ]


def test_an_endpoint_that_does_not_list_its_models_is_a_warning(tmp_path: Path) -> None:
    config(tmp_path, "{}\n")
    with ModelServer(no_completion, models=None) as server:
        done = check(tmp_path, "--model", OPENAI_BASE_URL=server.base_url)

    assert done.returncode == 0, done.stderr
    assert said(done) == [
        f"warning: model: {server.base_url} lists no models (HTTP 404), so model 'gpt-4o-mini' is not checked; "
        "nothing to set; the first question will tell"
    ]


def test_no_model_configured_is_an_error_when_asked(tmp_path: Path) -> None:
    config(tmp_path, "{}\n")

    done = check(tmp_path, "--model")

    assert done.returncode == 1
    assert said(done) == [
        "model: none is configured, so questions are refused (direct commands work); set OPENAI_API_KEY, or "
        "OPENAI_BASE_URL (and OPSBOT_MODEL) for a local OpenAI-compatible server"
    ]


# ---------------------------------------------------------------- configuration errors in plain words


def test_the_environment_is_named_as_it_is_set(tmp_path: Path) -> None:
    config(tmp_path, "{}\n")

    done = check(tmp_path, OPSBOT_LOOP__MAX_STEPS="0", OPSBOT_SLACK__WORKRS="4")

    assert done.returncode == 1
    assert said(done) == [
        "environment: OPSBOT_LOOP__MAX_STEPS: should be at least 1, got '0'",
        "environment: OPSBOT_SLACK__WORKRS: unknown key 'workrs' — did you mean 'workers'?",
    ]


def expected(path: Path) -> list[str]:
    """The lines a broken config's header says check-config prints for it."""
    lines = path.read_text().split("\n\n", 1)[0].splitlines()
    return [line.removeprefix("#   ") for line in lines if line.startswith("#   ")]


def test_every_broken_config_of_the_corpus_gets_exactly_its_lines() -> None:
    """All at once: each is a process of its own, which spends most of its time importing."""
    corpus = sorted(BROKEN_CONFIGS.glob("*.yaml"))
    assert len(corpus) >= 4
    running = {
        path: subprocess.Popen(
            [sys.executable, "-m", "opsbot.bot", "check-config", path.name],
            cwd=BROKEN_CONFIGS,
            env=clean_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for path in corpus
    }
    for path, process in running.items():
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 1, (path.name, stderr)
        assert stderr.splitlines() == expected(path), path.name
