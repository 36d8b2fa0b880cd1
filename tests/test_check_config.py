"""`opsbot check-config` as a user runs it (a real subprocess): configuration errors in plain
words, from a corpus of broken files (tests/fixtures/broken_configs) each holding the exact lines
check-config prints for it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from tests.test_cli import clean_env, opsbot

BROKEN_CONFIGS = Path(__file__).parent / "fixtures" / "broken_configs"


def config(tmp_path: Path, policy: str, top: str = "") -> Path:
    """opsbot.yaml in `tmp_path`: `top`, then `policy` under `policy:`."""
    path = tmp_path / "opsbot.yaml"
    path.write_text(top + "policy:\n" + textwrap.indent(textwrap.dedent(policy).lstrip("\n"), "  "))
    return path


def check(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return opsbot("check-config", "opsbot.yaml", *args, cwd=tmp_path, **env)


def said(done: subprocess.CompletedProcess[str]) -> list[str]:
    return done.stderr.splitlines()


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
