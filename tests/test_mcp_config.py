"""`policy.mcp.<server>`: MCP servers and their allowlisted tools, as an operator writes them."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from opsbot.config.check import ConfigError, Problem
from opsbot.config.settings import Settings, load_file_config


def write(path: Path, policy: str) -> Path:
    path.write_text("policy:\n" + textwrap.indent(textwrap.dedent(policy).lstrip("\n"), "  "), encoding="utf-8")
    return path


def problems_of(path: Path) -> list[Problem]:
    with pytest.raises(ConfigError) as caught:
        load_file_config(path)
    return caught.value.problems


def test_a_stdio_and_an_http_server_load_with_their_allowlists(tmp_path: Path) -> None:
    path = write(
        tmp_path / "opsbot.yaml",
        """
        mcp:
          git:
            command: [venv/bin/mcp-server-git, --repository, /srv/repo]
            env: [GIT_AUTHOR_NAME]
            tools:
              git_status: {risk: read}
              git_commit: {risk: write, access: {groups: [oncall]}}
          grafana:
            url: https://mcp.example.com/mcp
            headers: {Authorization: GRAFANA_MCP_AUTH}
            timeout_s: 5
            start: at_startup
            tools:
              search_dashboards: {risk: read}
        """,
    )
    policy = Settings.load(path).policy
    git, grafana = policy.mcp["git"], policy.mcp["grafana"]
    # A relative program is the config directory's, like every path of the policy.
    assert git.command == [str(tmp_path / "venv/bin/mcp-server-git"), "--repository", "/srv/repo"]
    assert git.start == "on_demand" and git.timeout_s == 30
    assert git.tools["git_commit"].risk == "write" and git.tools["git_commit"].access.groups == {"oncall"}
    assert grafana.url == "https://mcp.example.com/mcp" and grafana.headers == {"Authorization": "GRAFANA_MCP_AUTH"}


def test_a_bare_program_name_is_left_for_path(tmp_path: Path) -> None:
    server = "mcp:\n  time:\n    command: [uvx, mcp-server-time]\n    tools: {now: {risk: read}}\n"
    path = write(tmp_path / "opsbot.yaml", server)
    assert Settings.load(path).policy.mcp["time"].command == ["uvx", "mcp-server-time"]


@pytest.mark.parametrize(
    ("server", "said"),
    [
        ("tools: {t: {risk: read}}", "exactly one of `command`"),
        ("command: [x]\n    url: http://h/mcp\n    tools: {t: {risk: read}}", "exactly one of `command`"),
        ("url: http://h/mcp\n    env: [A]\n    tools: {t: {risk: read}}", "`env` is for a server started from"),
        ("command: [x]\n    headers: {X-A: A}\n    tools: {t: {risk: read}}", "`headers` are for a `url` server"),
        ("command: [x]\n    tools: {}", "should not be empty"),
        ("command: [x]\n    tools: {t: {risk: delete}}", "read"),
        ("command: [x]\n    tools: {t: {risk: read, approve: yes}}", "approve"),
        ("command: []\n    tools: {t: {risk: read}}", "should not be empty"),
        ("command: [x]\n    env: [NOT-A-NAME]\n    tools: {t: {risk: read}}", "env"),
    ],
)
def test_a_server_entry_that_cannot_work_is_refused_at_its_line(tmp_path: Path, server: str, said: str) -> None:
    path = write(tmp_path / "opsbot.yaml", f"mcp:\n  s1:\n    {server}\n")
    problems = problems_of(path)
    assert problems and all(p.path.startswith("policy.mcp.s1") for p in problems), problems
    assert any(said in str(p) for p in problems), problems
    assert all(p.where.rsplit(":", 1)[-1].isdigit() for p in problems), problems


@pytest.mark.parametrize("name", ["prom.prod", "a__b", "git_", "Git", "-x"])
def test_a_server_name_must_make_unambiguous_tool_names(tmp_path: Path, name: str) -> None:
    path = write(tmp_path / "opsbot.yaml", f"mcp:\n  {name}:\n    command: [x]\n    tools: {{t: {{risk: read}}}}\n")
    assert any(p.path.startswith("policy.mcp") for p in problems_of(path))


def test_an_offered_name_longer_than_a_model_takes_is_refused(tmp_path: Path) -> None:
    tool = "t" * 60
    server = f"mcp:\n  server:\n    command: [x]\n    tools: {{{tool}: {{risk: read}}}}\n"
    path = write(tmp_path / "opsbot.yaml", server)
    assert any(f"server__{tool}" in str(p) and "64" in str(p) for p in problems_of(path))
