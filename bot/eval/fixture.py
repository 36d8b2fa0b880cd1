"""A scenario's world, built in a temporary directory: its logs, config files and commands, as a
Policy over them. Nothing of the user's systems is read or run; commands print fixed text with
`cat`, and write commands (which only ever wait for approval) would only print their arguments."""

from __future__ import annotations

import re
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ...config.policy import Command, ConfigRoot, Policy, Service
from .suite import CommandFixture, Scenario

_NOW = re.compile(r"\{now(?:-(\d+)([smhd]))?\}")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def dated(text: str, now: datetime) -> str:
    """`{now-15m}` -> the ISO-8601 UTC time 15 minutes before `now` (logs read as recent)."""

    def stamp(match: re.Match[str]) -> str:
        back = int(match.group(1)) * _UNIT_S[match.group(2)] if match.group(1) else 0
        return (now - timedelta(seconds=back)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    return _NOW.sub(stamp, text)


def build(scenario: Scenario, root: Path, now: datetime) -> Policy:
    fixture = scenario.fixture
    services = {}
    for name, text in fixture.logs.items():
        log = root / "logs" / f"{name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(dated(text, now))
        services[name] = Service(description=f"the {name} service", logs=[log])
    roots = {}
    for name, files in fixture.configs.items():
        directory = root / "configs" / name
        directory.mkdir(parents=True, exist_ok=True)
        for file, content in files.items():
            (directory / file).write_text(dated(content, now))
        only = next(iter(files)) if len(files) == 1 else None
        path = directory / only if only else directory
        roots[name] = ConfigRoot(description=f"{name}'s configuration", path=path)
    commands = {name: _command(name, spec, root) for name, spec in fixture.commands.items()}
    return Policy(services=services, commands=commands, config_files=roots)


def _command(name: str, spec: CommandFixture, root: Path) -> Command:
    if spec.risk == "write":
        printf = shutil.which("printf") or "printf"
        argv = [printf, "--", f"would {name} %s\\n", *(f"{{{p}}}" for p in spec.params)]
        params = {p: {"enum": values} for p, values in spec.params.items()}
        write = {"description": spec.description, "argv": argv, "params": params, "risk": "write"}
        return Command.model_validate(write)
    output = root / "outputs" / f"{name}.txt"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(spec.output)
    return Command(description=spec.description, argv=[shutil.which("cat") or "cat", str(output)])
