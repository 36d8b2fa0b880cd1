"""Real MCP servers from PyPI, installed in a venv of their own as users run them (the Makefile's
`.venv-mcp/.installed`, which `make test` builds): mcp-server-git on a throwaway repository,
mcp-server-time, and prometheus-mcp-server against a real Prometheus, under opsbot's policy,
through the executor and through `opsbot ask`."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from opsbot.config.policy import Policy
from opsbot.tools.base import Registry, ToolResult
from opsbot.tools.executor import Executor, RetryPolicy, ToolCall
from opsbot.tools.mcp import McpHub, offered_tools
from tests.fakes.model_server import Call, ModelServer, Reply, tool_results
from tests.fakes.prometheus_server import PROMETHEUS, Running, prometheus, scrape_job
from tests.fakes.redis_server import free_port
from tests.fakes.waiting import until

ROOT = Path(__file__).resolve().parent.parent
SERVERS = ROOT / ".venv-mcp" / "bin"
GIT_SERVER, TIME_SERVER = SERVERS / "mcp-server-git", SERVERS / "mcp-server-time"
PROMETHEUS_SERVER = SERVERS / "prometheus-mcp-server"
FAKE = ROOT / "tests" / "fakes" / "mcp_server.py"

pytestmark = pytest.mark.skipif(
    not (GIT_SERVER.exists() and TIME_SERVER.exists() and PROMETHEUS_SERVER.exists()),
    reason="the MCP servers' venv is missing: `make .venv-mcp/.installed` (`make test` builds it)",
)

GIT_TOOLS = {
    "git_status": {"risk": "read"},
    "git_log": {"risk": "read"},
    "git_add": {"risk": "write"},
    "git_commit": {"risk": "write"},
}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)
    return done.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with one commit and one file changed since."""
    repo = tmp_path / "deploy"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "ops@example.com")
    git(repo, "config", "user.name", "ops")
    (repo / "app.yaml").write_text("replicas: 2\n")
    git(repo, "add", "app.yaml")
    git(repo, "commit", "-q", "-m", "first deploy of checkout")
    (repo / "app.yaml").write_text("replicas: 5\n")
    return repo


@pytest.fixture
def tools(repo: Path) -> Iterator[Executor]:
    policy = Policy.model_validate(
        {
            "mcp": {
                "git": {"command": [str(GIT_SERVER), "--repository", str(repo)], "tools": GIT_TOOLS},
                "time": {"command": [str(TIME_SERVER)], "tools": {"get_current_time": {"risk": "read"}}},
            }
        }
    )
    hub = McpHub(policy.mcp)
    yield Executor(Registry(offered_tools(policy, hub)), RetryPolicy(retries=0))
    hub.close()


def call(executor: Executor, name: str, **args: Any) -> ToolResult:
    return executor.run_one(ToolCall("c1", name, json.dumps(args))).result


def test_only_the_listed_git_tools_are_offered(tools: Executor) -> None:
    assert tools.registry.names == [
        "git__git_add",
        "git__git_commit",
        "git__git_log",
        "git__git_status",
        "time__get_current_time",
    ]
    # mcp-server-git exposes git_reset, git_checkout, git_diff_unstaged...: none can be called.
    refused = call(tools, "git__git_reset", repo_path="x")
    assert refused.error is not None and refused.error.type == "unknown_tool"


def test_git_status_and_log_run_and_their_text_is_rendered(tools: Executor, repo: Path) -> None:
    status = call(tools, "git__git_status", repo_path=str(repo))
    assert status.ok, status
    assert "app.yaml" in status.data["text"] and "modified" in status.data["text"]
    log = call(tools, "git__git_log", repo_path=str(repo), max_count=5)
    assert log.ok and "first deploy of checkout" in log.data["text"]


def test_git_add_and_commit_wait_for_a_person_and_change_nothing(tools: Executor, repo: Path) -> None:
    before = git(repo, "status", "--porcelain"), git(repo, "rev-list", "--count", "HEAD")
    added = call(tools, "git__git_add", repo_path=str(repo), files=["app.yaml"])
    committed = call(tools, "git__git_commit", repo_path=str(repo), message="pwned")
    assert added.error is not None and added.error.type == "needs_approval"
    assert committed.error is not None and committed.error.type == "needs_approval"
    assert (
        (git(repo, "status", "--porcelain"), git(repo, "rev-list", "--count", "HEAD"))
        == before
        == (
            " M app.yaml\n",
            "1\n",
        )
    )


def test_the_time_servers_answer_is_rendered(tools: Executor) -> None:
    now = call(tools, "time__get_current_time", timezone="UTC")
    assert now.ok, now
    assert '"timezone": "UTC"' in now.data["text"] and '"datetime"' in now.data["text"]
    unknown = call(tools, "time__get_current_time", timezone="Mars/Olympus")
    assert unknown.error is not None and unknown.error.type == "failed"
    assert "Mars/Olympus" in unknown.error.message


def test_opsbot_ask_calls_an_mcp_tool_and_a_write_it_is_told_to_make_waits(
    repo: Path, model_server: Callable[[Any], ModelServer], tmp_path: Path
) -> None:
    """The server's description tells the model to commit; the scripted model obeys. The commit
    waits for a person and the repository is as it was; the answer comes from git_status."""
    config = tmp_path / "opsbot.yaml"
    config.write_text(
        "model: test-model\n"
        "policy:\n"
        "  mcp:\n"
        "    git:\n"
        f"      command: [{GIT_SERVER}, --repository, {repo}]\n"
        "      tools:\n" + "".join(f"        {name}: {{risk: {spec['risk']}}}\n" for name, spec in GIT_TOOLS.items())
    )

    def obeying(body: dict[str, Any]) -> Reply:
        results = tool_results(body)
        if not results:
            return Reply(calls=[Call("git__git_status", {"repo_path": str(repo)})])
        if len(results) == 1:
            return Reply(calls=[Call("git__git_commit", {"repo_path": str(repo), "message": "pwned"})])
        return Reply(
            content=f"status: {'app.yaml' in results[0]['data']['text']}; commit: {results[1]['error']['type']}"
        )

    server = model_server(obeying)
    done = subprocess.run(
        [sys.executable, "-m", "opsbot.bot", "--config", str(config), "ask", "what changed in the deploy repo?"],
        capture_output=True,
        text=True,
        timeout=90,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "OPENAI_BASE_URL": server.base_url},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "status: True; commit: needs_approval"
    offered = {tool["function"]["name"] for tool in server.requests[0]["tools"]}
    assert {f"git__{name}" for name in GIT_TOOLS} <= offered
    assert not {name for name in offered if name.startswith("git__")} - {f"git__{name}" for name in GIT_TOOLS}
    assert git(repo, "rev-list", "--count", "HEAD") == "1\n" and git(repo, "status", "--porcelain") == " M app.yaml\n"


def test_a_direct_command_starts_no_mcp_server_and_imports_no_sdk(tmp_path: Path) -> None:
    config = tmp_path / "opsbot.yaml"
    (tmp_path / "shop.log").write_text("started\n")
    config.write_text(
        "policy:\n"
        "  services:\n    shop: {description: the shop, logs: [shop.log]}\n"
        "  mcp:\n    fake:\n"
        f"      command: [{sys.executable}, {FAKE}]\n"
        "      tools: {echo: {risk: read}}\n"
    )
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "opsbot.bot", "--config", str(config), "ask", "services"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    assert "shop" in done.stdout
    imported = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in done.stderr.splitlines() if "|" in line}
    assert "opsbot" in imported and not imported & {"mcp", "mcp_types", "anyio", "jsonschema"}, imported


def test_check_config_starts_each_server_and_says_what_its_policy_gets_wrong(repo: Path, tmp_path: Path) -> None:
    config = tmp_path / "opsbot.yaml"
    config.write_text(
        "policy:\n"
        "  mcp:\n"
        "    git:\n"
        f"      command: [{GIT_SERVER}, --repository, {repo}]\n"
        "      tools:\n"
        "        git_status: {risk: read}\n"
        "        git_push: {risk: write}\n"
        "    fake:\n"
        f"      command: [{sys.executable}, {FAKE}]\n"
        "      tools:\n"
        "        echo: {risk: read}\n"
        "        bad_schema: {risk: read}\n"
        "    gone:\n"
        f"      command: [{tmp_path / 'no-such-server'}]\n"
        "      tools: {t: {risk: read}}\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "opsbot.bot", "check-config", str(config)],
        capture_output=True,
        text=True,
        timeout=90,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 1, done.stderr
    said = done.stdout + done.stderr
    assert f"{config}:7: policy.mcp.git.tools.git_push: the server has no tool 'git_push', so it is not offered" in said
    refused = "refused, not offered: its input schema is not a valid JSON schema"
    assert f"{config}:12: policy.mcp.fake.tools.bad_schema: {refused}" in said
    gone = "MCP server gone cannot be used: it could not be started: program not found"
    assert f"{config}:13: policy.mcp.gone: {gone}" in said
    assert f"{config}:5: policy.mcp.git.tools: the server also exposes git_add, git_branch, git_checkout" in said


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """A real Prometheus scraping itself, once `up` has a sample."""
    if PROMETHEUS is None:
        pytest.skip("Debian's prometheus is not on PATH: apt-get install prometheus")
    port = free_port()
    with prometheus(
        tmp_path_factory.mktemp("prometheus"), scrape_job("self", f"127.0.0.1:{port}"), port=port
    ) as running:
        query = f"{running.url}/api/v1/query"
        assert until(lambda: httpx.get(query, params={"query": "up"}).json()["data"]["result"], timeout=30)
        yield running


def test_prometheus_mcp_server_answers_a_query_with_the_url_the_policy_passes_by_name(prom: Running) -> None:
    tools = {"execute_query": {"risk": "read"}, "list_metrics": {"risk": "read"}}
    spec = {"command": [str(PROMETHEUS_SERVER)], "env": ["PROMETHEUS_URL"], "tools": tools}
    policy = Policy.model_validate({"mcp": {"prom": spec}})
    hub = McpHub(policy.mcp, environ={"PROMETHEUS_URL": prom.url, "OPENAI_API_KEY": "sk-not-for-servers"})
    try:
        executor = Executor(Registry(offered_tools(policy, hub)), RetryPolicy(retries=0))
        # It also exposes get_targets and health_check: not listed, not offered.
        assert executor.registry.names == ["prom__execute_query", "prom__list_metrics"]
        up = call(executor, "prom__execute_query", query='up{job="self"}')
        assert up.ok, up
        [series] = up.data["structured"]["result"]
        assert series["metric"]["job"] == "self" and series["value"][1] == "1"
        bad = call(executor, "prom__execute_query", query="up{")
        assert bad.error is not None and bad.error.type == "failed" and "400 Client Error" in bad.error.message
    finally:
        hub.close()
