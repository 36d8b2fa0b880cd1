"""`opsbot check-config`: everything that would fail when a config file is used, found before.

The file is read as a model (config/check.py: every problem at its line, in plain words), its
runbooks_dir loaded and checked against the policy (config/runbooks.py), then what it names
is looked for on this host and checked against the tools that will use it:

- errors (exit 1), each failing a tool whenever it is used: config/runtime_check.py's (config
  roots, log commands query_logs cannot fill, runbooks in the policy naming what it does not
  declare); a command's program, or journalctl for a service's units, not found where the
  runner looks (the fixed system PATH, or the path written); a runbook step's arguments its tool
  refuses; the environment's settings; with `--model`, a model endpoint that cannot be reached
  or does not serve the configured model.
- warnings (printed, exit 0): log files and globs that match nothing, and log directories that
  do not exist. Logs are written by the services, which may start after opsbot or create their
  log directory when they first write; a pod's log volume exists only in the pod. Query_logs
  then answers that the service has no logs yet, and reads them once they appear. A model
  endpoint that does not list its models is a warning too: the name cannot be confirmed. A
  metrics source's or Alertmanager's header whose environment variable is not set here is a
  warning as well (it may be set only where opsbot serves): query_metrics or query_alerts refuses
  that source without it; so is a variable `mcp_serve.tokens` names (mcp-serve --http needs it).
- MCP servers are started and asked for their tools: a server that cannot be, a listed tool it
  lacks and a listed tool whose input schema is refused are errors; tools it exposes that the
  policy does not list are a warning (they are never offered).

Every problem found in the file names the file and line where the config says it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import ValidationError

from ..config.check import Located, located
from ..config.mcp_serve import McpServeSettings
from ..config.policy import HttpSource, Policy, offered_name
from ..config.runbooks import load_runbooks
from ..config.runtime_check import runtime_problems
from ..config.settings import Settings, environment_problems, load_file_config
from ..tools import runner
from ..tools.catalog import runbook_arg_problems
from ..tools.logs import log_files
from ..tools.mcp import Down, McpHub, refusals
from .build import build_client
from .llm import NOT_CONFIGURED, ModelState


@dataclass
class Findings:
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was confirmed, beside the summary
    summary: str = ""


def check_config_file(path: Path, *, model: bool = False) -> Findings:
    """Every check of the file at `path`; `config.check.ConfigError` when the file (or a runbook
    file) cannot be read as a config at all, since nothing else can be checked then."""
    config = load_file_config(path)
    policy = config.policy.resolved(path.resolve().parent)
    runbooks = {**policy.runbooks, **(load_runbooks(policy.runbooks_dir, policy) if policy.runbooks_dir else {})}
    found = Findings(
        errors=[str(p) for p in located(path, [*runtime_problems(policy), *_missing_programs(policy)])],
        warnings=[
            str(p)
            for p in located(path, [*_missing_logs(policy), *_unset_headers(policy), *_unset_tokens(config.mcp_serve)])
        ],
    )
    servers = _mcp_servers(policy) if policy.mcp else McpFindings([], [], {})
    found.errors += [str(p) for p in located(path, servers.errors)]
    found.warnings += [str(p) for p in located(path, servers.warnings)]
    # Only the tools know their arguments (an MCP tool's, its running server), so this is checked
    # here rather than when the files load.
    found.errors += runbook_arg_problems(policy.model_copy(update={"runbooks": runbooks}), servers.schemas)
    try:
        settings = Settings.load(path)  # the environment (REDIS_URL, tokens, endpoints) as chat, ask and serve read it
    except ValidationError as exc:
        found.errors += environment_problems(exc)
    else:
        if model:
            _check_model(settings, path if config.model == settings.model else None, found)
    found.summary = (
        (
            f"{len(policy.services)} service(s), {len(policy.commands)} command(s), "
            f"{len(policy.config_files)} config root(s), {len(runbooks)} runbook(s)"
        )
        + (f", {len(policy.metrics)} metrics source(s)" if policy.metrics else "")
        + (f", {len(policy.alertmanagers)} Alertmanager(s)" if policy.alertmanagers else "")
    )
    found.summary += f", {len(policy.mcp)} MCP server(s)" if policy.mcp else ""
    return found


class McpFindings(NamedTuple):
    errors: list[Located]
    warnings: list[Located]
    schemas: dict[str, dict[str, Any]]  # each tool offered, by offered name: its input schema


def _mcp_servers(policy: Policy) -> McpFindings:
    """Each MCP server started and asked for its tools: one that cannot be, and a listed tool it
    lacks or whose schema is refused, are errors (those tools would never work); tools it exposes
    that the policy does not list are a warning (never offered, which may be the point). The
    schemas of the tools offered are kept, for the runbook steps that call them."""
    found = McpFindings([], [], {})
    hub = McpHub(policy.mcp)
    try:
        for name, link in hub.links.items():
            listing = link.tools()
            if isinstance(listing, Down):
                found.errors.append((("policy", "mcp", name), f"MCP server {name} cannot be used: {listing.reason}"))
                continue
            refused = refusals(link.spec, listing)
            found.errors.extend((("policy", "mcp", name, "tools", tool), why) for tool, why in refused.items())
            found.schemas.update(
                (offered_name(name, tool), listing[tool].input_schema)
                for tool in link.spec.tools
                if tool not in refused
            )
            if unlisted := sorted(set(listing) - set(link.spec.tools)):
                found.warnings.append(
                    (
                        ("policy", "mcp", name, "tools"),
                        f"the server also exposes {', '.join(unlisted)}: not offered, as the policy does not list them",
                    )
                )
    finally:
        hub.close()
    return found


def _missing_programs(policy: Policy) -> list[Located]:
    """Programs the runner would not find: each command's, and journalctl for journald units."""
    found: list[Located] = []
    for name, spec in policy.commands.items():
        program = spec.argv[0]
        if runner.which(program) is None:
            what = (
                f"{program} is not an executable file"
                if "/" in program
                else f"program {program!r} is not installed on this host (looked for on {runner.SYSTEM_PATH})"
            )
            found.append((("policy", "commands", name, "argv", 0), f"{what}, so command {name!r} cannot run"))
    units = [name for name, service in policy.services.items() if service.journald]
    if units and runner.which("journalctl") is None:
        found += [
            (
                ("policy", "services", name, "journald"),
                f"journalctl is not installed on this host (looked for on {runner.SYSTEM_PATH}), so these units "
                "cannot be read",
            )
            for name in units
        ]
    return found


def _missing_logs(policy: Policy) -> list[Located]:
    found: list[Located] = []
    for name, service in policy.services.items():
        for index, entry in enumerate(service.logs):
            where: tuple[int | str, ...] = ("policy", "services", name, "logs", index)
            directory = _fixed_directory(entry)
            if not directory.is_dir():
                said = f"directory {directory} does not exist: a wrong path, or one its service has not created yet"
                found.append((where, said))
            else:
                found += [(where, problem) for problem in log_files([entry])[1]]
    return found


def _unset_headers(policy: Policy) -> list[Located]:
    sources: dict[str, tuple[str, Mapping[str, HttpSource]]] = {
        "metrics": ("query_metrics", policy.metrics),
        "alertmanagers": ("query_alerts", policy.alertmanagers),
    }
    return [
        (
            ("policy", kind, name, "headers", header),
            f"environment variable {variable} is not set here; {tool} refuses {name}'s queries without it",
        )
        for kind, (tool, named) in sources.items()
        for name, source in named.items()
        for header, variable in source.headers.items()
        if not os.environ.get(variable)
    ]


def _unset_tokens(serving: McpServeSettings) -> list[Located]:
    return [
        (
            ("mcp_serve", "tokens", n, "token_env"),
            f"environment variable {token.token_env} is not set here; opsbot mcp-serve --http does not start "
            "without it",
        )
        for n, token in enumerate(serving.tokens)
        if not os.environ.get(token.token_env)
    ]


def _fixed_directory(entry: Path) -> Path:
    """The directory of a log entry above any glob in it: what must exist for anything to match."""
    parts = entry.parent.parts
    fixed = next((i for i, part in enumerate(parts) if any(c in part for c in "*?[")), len(parts))
    return Path(*parts[:fixed])


def _check_model(settings: Settings, named_in: Path | None, found: Findings) -> None:
    """The endpoint asked for the model; a model it does not serve is shown at the file's
    `model:` line when the file (`named_in`) is where the name comes from."""
    client = build_client(settings)
    health = NOT_CONFIGURED if client is None else client.check()
    if health.state is ModelState.ok:
        found.notes.append(f"model: {health.said}")
    elif health.usable:
        found.warnings.append(f"model: {health.detail()}")
    elif health.state is ModelState.unknown_model and named_in is not None:
        found.errors += [str(problem) for problem in located(named_in, [(("model",), health.detail())])]
    else:
        found.errors.append(f"model: {health.detail()}")
