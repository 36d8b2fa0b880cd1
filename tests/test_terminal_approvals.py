"""Approvals in `opsbot chat`, through the one approvals service: the exact argv and who may
approve are shown; only a local approver the policy names (with `self_approval`, since in a
terminal the asker approves) is asked y/N; the model is told the outcome and goes on."""

from __future__ import annotations

import getpass
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from opsbot.bot.cli import main
from opsbot.config.settings import SAMPLE_CONFIG
from tests.fakes.model_server import Call, ModelServer, Reply, tool_results

ME = getpass.getuser()


def sample_copy(tmp_path: Path, **restart: Any) -> Path:
    """The bundled sample in `tmp_path`, its restart command changed by `restart`."""
    root = tmp_path / "sample"
    shutil.copytree(SAMPLE_CONFIG.parent, root)
    config = root / SAMPLE_CONFIG.name
    data = yaml.safe_load(config.read_text())
    data["policy"]["commands"]["restart"].update(restart)
    config.write_text(yaml.safe_dump(data))
    return config


def chat(config: Path, typed: str, **env: str) -> str:
    clean = {"OPENAI_API_KEY": None, "OPENAI_BASE_URL": None, "REDIS_URL": None, **env}
    done = CliRunner().invoke(main, ["--config", str(config), "chat"], input=typed, env=clean)
    assert done.exit_code == 0, done.output
    assert "Traceback" not in done.output
    return done.output


def test_a_local_approver_approves_and_exactly_the_approved_argv_runs(tmp_path: Path) -> None:
    config = sample_copy(tmp_path, approvers={"users": [ME]}, self_approval=True)
    out = chat(config, "run restart service=payments\ny\nexit\n")
    printf = shutil.which("printf")
    assert f"⏸ approval needed: {printf} -- 'would restart %s; this sample changes nothing\\n' payments" in out
    assert f"may approve: users {ME}" in out
    assert "approve and run it? [y/N]" in out
    assert out.count("would restart payments; this sample changes nothing") == 1
    assert "exit_code" not in out and "command:" not in out, "the output shown as `run` shows it, no field names"


def test_the_sample_as_it_ships_lets_its_local_user_see_the_approval_through() -> None:
    """A newcomer's `make chat`: the write command asks them, and runs once they say yes."""
    out = chat(SAMPLE_CONFIG, "run restart service=checkout\ny\nexit\n")
    assert "may approve: anyone" in out and "approve and run it? [y/N]" in out
    assert out.count("would restart checkout; this sample changes nothing") == 1


def test_no_runs_nothing(tmp_path: Path) -> None:
    config = sample_copy(tmp_path, approvers={"users": [ME]}, self_approval=True)
    out = chat(config, "run restart service=payments\n\nexit\n")  # Enter: the default is No
    assert "denied: nothing was run" in out
    assert "would restart payments;" not in out


@pytest.mark.parametrize(
    "restart, says",
    [
        ({"self_approval": False}, "a request cannot be approved by the person who asked for it"),
        ({"approvers": {"users": ["U0ONCALL"]}, "self_approval": True}, f"user {ME} is not one of U0ONCALL"),
    ],
)
def test_someone_the_policy_does_not_name_is_not_asked(tmp_path: Path, restart: dict[str, Any], says: str) -> None:
    out = chat(sample_copy(tmp_path, **restart), "run restart service=auth\nexit\n")
    assert f"you cannot approve it here: {says}" in out or f"you may not approve 'restart': {says}" in out
    assert "Nothing was run; ask an approver." in out
    assert "[y/N]" not in out and "would restart auth;" not in out


def test_the_model_is_told_the_outcome_and_goes_on(tmp_path: Path, model_server: Callable[[Any], ModelServer]) -> None:
    told: list[str] = []

    def model(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "user" and last["content"] == "please restart payments":
            return Reply(calls=[Call("run_command", {"command": "restart", "params": {"service": "payments"}})])
        if tool_results(body):
            return Reply(content="The restart waits for your approval.")
        told.append(str(last["content"]))
        return Reply(content="Restarted; payments is back.")

    server = model_server(model)
    config = sample_copy(tmp_path, approvers={"users": [ME]}, self_approval=True)
    out = chat(config, "please restart payments\ny\nexit\n", OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="k")
    assert "The restart waits for your approval." in out
    assert out.count("would restart payments; this sample changes nothing") == 1
    assert "Restarted; payments is back." in out
    [outcome] = told
    assert f"{ME} approved `restart`; it ran" in outcome and "would restart payments" in outcome
