"""Settings (environment + one YAML file) and the config checker that reports every problem with its line."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from opsbot.config.check import ConfigError, Problem
from opsbot.config.settings import SAMPLE_CONFIG, Settings, load_file_config

ENV_VARS = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "REDIS_URL")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing from the developer's shell may leak into what a test expects."""
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    for name in list(os.environ):
        if name.upper().startswith("OPSBOT_"):
            monkeypatch.delenv(name, raising=False)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def line_of(path: Path, snippet: str) -> int:
    """1-based number of the only line of `path` containing `snippet`."""
    hits = [n for n, line in enumerate(path.read_text().splitlines(), 1) if snippet in line]
    assert len(hits) == 1, f"{snippet!r} is on lines {hits}"
    return hits[0]


def problems_of(path: Path) -> list[Problem]:
    with pytest.raises(ConfigError) as caught:
        load_file_config(path)
    return caught.value.problems


def located(path: Path, problems: list[Problem]) -> dict[str, int]:
    """{dotted key path: line} for every problem; each must point into `path` with a line."""
    out: dict[str, int] = {}
    for problem in problems:
        file, _, line = problem.where.rpartition(":")
        assert file == str(path), problem
        assert line.isdigit(), f"no line number in {problem}"
        out[problem.path] = int(line)
    return out


GOOD_YAML = """
model: yaml-model
llm:
  timeout_s: 12
loop:
  max_steps: 6
  time_budget_s: 50
memory:
  window_tokens: 1234
policy:
  services:
    shop:
      description: the shop
      logs: [logs/shop.log, /var/log/absolute.log]
  commands:
    uptime:
      description: uptime
      argv: [uptime]
  config_files:
    shop:
      path: configs/shop.yaml
"""


@pytest.fixture
def conf_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "conf"
    write(directory / "opsbot.yaml", GOOD_YAML)
    return directory


# ---------------------------------------------------------------- Settings.load


def test_yaml_values_are_used_and_unset_ones_keep_their_defaults(conf_dir: Path) -> None:
    settings = Settings.load(conf_dir / "opsbot.yaml")

    assert settings.model == "yaml-model"
    assert settings.llm.timeout_s == 12
    assert settings.loop.max_steps == 6
    assert settings.loop.time_budget_s == 50
    assert settings.memory.window_tokens == 1234
    assert settings.loop.max_parallel_tools == 4  # not in the file: the default
    assert set(settings.policy.services) == {"shop"}
    assert settings.policy.commands["uptime"].argv == ["uptime"]
    assert settings.config == conf_dir / "opsbot.yaml"
    assert settings.redis_url is None


def test_environment_wins_over_yaml(conf_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPSBOT_MODEL", "env-model")
    monkeypatch.setenv("OPSBOT_LOOP__MAX_STEPS", "3")
    monkeypatch.setenv("REDIS_URL", "redis://cache.internal:6380/2")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")

    settings = Settings.load(conf_dir / "opsbot.yaml")

    assert settings.model == "env-model"
    assert settings.loop.max_steps == 3
    # one nested value from the environment does not wipe the rest of the YAML section
    assert settings.loop.time_budget_s == 50
    assert settings.redis_url == "redis://cache.internal:6380/2"
    assert settings.openai_base_url == "http://localhost:11434/v1"
    assert settings.model_configured


def test_opsbot_config_selects_the_file(conf_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPSBOT_CONFIG", str(conf_dir / "opsbot.yaml"))
    assert Settings.load().model == "yaml-model"


def test_relative_paths_are_resolved_against_the_yaml_files_directory(
    conf_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "somewhere" / "else"
    elsewhere.mkdir(parents=True)
    monkeypatch.chdir(elsewhere)  # the working directory must not matter

    settings = Settings.load(Path("../../conf/opsbot.yaml"))

    assert settings.policy.services["shop"].logs == [
        (conf_dir / "logs" / "shop.log").resolve(),
        Path("/var/log/absolute.log"),
    ]
    assert settings.policy.config_files["shop"].path == (conf_dir / "configs" / "shop.yaml").resolve()


def test_sample_log_paths_point_at_the_bundled_files(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    settings = Settings.load(SAMPLE_CONFIG)
    for service in settings.policy.services.values():
        for log in service.logs:
            assert log.is_absolute() and log.is_file(), log


def test_no_model_is_configured_without_key_or_base_url(conf_dir: Path) -> None:
    assert not Settings.load(conf_dir / "opsbot.yaml").model_configured


@pytest.mark.parametrize(("name", "value"), [("OPENAI_API_KEY", "sk-test"), ("OPENAI_BASE_URL", "http://h/v1")])
def test_a_key_or_a_base_url_alone_configures_a_model(
    conf_dir: Path, monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    assert Settings.load(conf_dir / "opsbot.yaml").model_configured


@pytest.mark.parametrize("name", ["OPENAI_API_KEY", "OPENAI_BASE_URL"])
def test_an_empty_variable_configures_no_model(conf_dir: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    # `OPENAI_API_KEY=${OPENAI_API_KEY}` in a compose file or `export OPENAI_API_KEY=` sets it empty.
    # That is no key: opsbot must say "no model configured", not try the API and report it down.
    monkeypatch.setenv(name, "")
    assert not Settings.load(conf_dir / "opsbot.yaml").model_configured


def test_settings_load_raises_config_error_for_a_bad_file(tmp_path: Path) -> None:
    path = write(tmp_path / "opsbot.yaml", "loop:\n  max_steps: 0\n")
    with pytest.raises(ConfigError) as caught:
        Settings.load(path)
    assert f"{path}:2" in str(caught.value)


# ---------------------------------------------------------------- load_file_config


def test_the_bundled_sample_validates() -> None:
    config = load_file_config(SAMPLE_CONFIG)
    assert set(config.policy.services) == {"checkout", "payments", "auth"}
    assert set(config.policy.commands) == {"uptime", "disk-usage", "memory", "mount-usage", "restart"}
    assert set(config.policy.config_files) == {"checkout", "payments"}


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = write(
        tmp_path / "opsbot.yaml",
        """
        model: x
        policy:
          services:
            checkout:
              logs: [logs/checkout.log]
             description: misindented
        """,
    )
    [problem] = problems_of(path)
    assert problem.where == f"{path}:{line_of(path, 'misindented')}"
    assert "not valid YAML" in problem.message
    assert str(problem).startswith(f"{path}:{line_of(path, 'misindented')}:")


def test_unclosed_bracket_points_at_the_line_that_opened_it(tmp_path: Path) -> None:
    path = write(
        tmp_path / "opsbot.yaml",
        """
        model: x
        policy:
          services:
            checkout:
              logs: [logs/checkout.log, logs/old.log
        memory:
          window_tokens: 1000
        """,
    )
    [problem] = problems_of(path)
    opened = line_of(path, "logs: [")
    # PyYAML notices at the next key ("memory:"), which is fine; the engineer must be told where
    # the bracket was opened, either as the location or in the message.
    assert problem.where == f"{path}:{opened}" or f"line {opened}" in problem.message, str(problem)


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    path = write(tmp_path / "opsbot.yaml", "- model\n- loop\n")
    [problem] = problems_of(path)
    assert problem.where == f"{path}:1"
    assert "mapping" in problem.message


def test_unreadable_file_is_one_problem(tmp_path: Path) -> None:
    [problem] = problems_of(tmp_path / "missing.yaml")
    assert "cannot read" in problem.message


@pytest.mark.parametrize(
    ("yaml_text", "marker", "said"),
    [
        pytest.param(
            "loop:\n  max_steps: 3\n  max_stepz: 5\n",
            "max_stepz",
            "loop: unknown key 'max_stepz' — did you mean 'max_steps'?",
            id="unknown-key",
        ),
        pytest.param(
            "model: x\nmemmory:\n  window_tokens: 1000\n",
            "memmory",
            "unknown key 'memmory' — did you mean 'memory'?",
            id="unknown-section",
        ),
        pytest.param(
            "loop:\n  max_steps: 0\n",
            "max_steps",
            "loop.max_steps: should be at least 1, got 0",
            id="bad-value",
        ),
        pytest.param(
            "loop:\n  time_budget_s: soon\n",
            "time_budget_s",
            "loop.time_budget_s: should be a number, got 'soon'",
            id="bad-type",
        ),
        pytest.param(
            "policy:\n  services:\n    checkout:\n      logs: logs/checkout.log\n",
            "logs:",
            "policy.services.checkout.logs: should be a list, got 'logs/checkout.log'",
            id="bad-value-not-a-list",
        ),
        pytest.param(
            "policy:\n  services:\n    Checkout:\n      logs: [a.log]\n",
            "Checkout",
            "policy.services.Checkout (name): should be a name in lower case: letters, digits, '.', '_' and '-', "
            "starting with a letter or digit, got 'Checkout'",
            id="upper-case-service-name",
        ),
        pytest.param(
            "policy:\n  commands:\n    uptime:\n      argv: [uptime]\n      timeout_s: 5\n",
            "uptime:",
            "policy.commands.uptime: missing required key 'description'",
            id="missing-field-points-at-its-parent",
        ),
        pytest.param(
            "policy:\n  services:\n    shop:\n      log_command: pod-logs\n",
            "log_command",
            "policy.services.shop.log_command: log_command 'pod-logs' is not declared under policy.commands "
            "(declared: none)",
            id="log-command-not-declared",
        ),
        pytest.param(
            "policy:\n  services:\n    shop:\n      log_command: pod-logs\n"
            "  commands:\n    pod-logs: {description: x, argv: [/bin/true], risk: write}\n",
            "log_command",
            "policy.services.shop.log_command: log_command 'pod-logs' is risk: write; a command that reads logs "
            "must be risk: read",
            id="log-command-that-writes",
        ),
        pytest.param(
            "policy:\n  services:\n    shop:\n      log_command: pod-logs\n  commands:\n    pod-logs:\n"
            "      description: x\n      argv: [/bin/echo, --, '{ns}', '{since}']\n"
            "      params: {ns: {enum: [a]}, since: {pattern: '[0-9]+s'}}\n",
            "log_command",
            "policy.services.shop.log_command: log_command 'pod-logs' has parameter(s) ns without a default; "
            "query_logs fills only since and lines",
            id="log-command-with-a-parameter-opsbot-cannot-fill",
        ),
    ],
)
def test_each_kind_of_problem_has_its_line_and_key_path(tmp_path: Path, yaml_text: str, marker: str, said: str) -> None:
    path = write(tmp_path / "opsbot.yaml", yaml_text)
    [problem] = problems_of(path)
    assert str(problem) == f"{path}:{line_of(path, marker)}: {said}"


BROKEN_YAML = """
model: gpt-4o-mini
loop:
  max_steps: 0
  max_stepz: 3
memmory:
  window_tokens: 100
policy:
  services:
    Checkout:
      logs: [logs/checkout.log]
    payments:
      description: charges cards
  commands:
    uptime:
      argv: [uptime]
      timeout_s: -1
  config_files:
    checkout: {path: configs/checkout.yaml, max_bytes: lots}
"""


def test_every_problem_is_listed_with_its_line_and_key_path(tmp_path: Path) -> None:
    path = write(tmp_path / "opsbot.yaml", BROKEN_YAML)

    with pytest.raises(ConfigError) as caught:
        load_file_config(path)
    found = located(path, caught.value.problems)

    # The key path of a bad name says it is the name that is wrong.
    bad_name = [key for key in found if key.startswith("policy.services.Checkout")]
    assert len(bad_name) == 1 and "name" in bad_name[0], found
    found["policy.services.Checkout"] = found.pop(bad_name[0])

    assert found == {
        "loop.max_steps": line_of(path, "max_steps: 0"),  # bad value
        "loop": line_of(path, "max_stepz"),  # unknown key: shown under its parent, at its own line
        "": line_of(path, "memmory"),  # unknown section: the key's line, not its first child's
        "policy.services.Checkout": line_of(path, "Checkout"),  # upper-case name: the name's line
        "policy.services.payments.logs": line_of(path, "payments:"),  # missing: the parent's line
        "policy.commands.uptime": line_of(path, "uptime:"),  # missing: the parent's line
        "policy.commands.uptime.timeout_s": line_of(path, "timeout_s: -1"),  # bad value
        "policy.config_files.checkout.max_bytes": line_of(path, "max_bytes: lots"),  # bad value, flow style
    }
    # and the exception's text, which is what check-config prints, carries every one of them
    for problem in caught.value.problems:
        assert str(problem) in str(caught.value)
