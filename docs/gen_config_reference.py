"""Write docs/configuration.md from the pydantic models that read the configuration.

Every field of `config/settings.py` and `config/policy/*.py` with its type, default and
description, in the order the models declare them, so the reference cannot say what the code
does not. `tests/test_docs.py` regenerates it and fails when the file in the repository differs:
after changing a model, run

    .venv/bin/python docs/gen_config_reference.py

Nothing here is written by hand except the few sentences of the introductions below.
"""

from __future__ import annotations

import inspect
import json
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from annotated_types import Ge, Gt, Le, Lt, MaxLen, MinLen
from pydantic import BaseModel, ByteSize, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from opsbot.config import mcp_serve, settings
from opsbot.config.policy import (
    Access,
    AlertmanagerSource,
    ApprovalStep,
    BranchStep,
    Command,
    Condition,
    ConfigRoot,
    ExplainStep,
    Gate,
    LineTime,
    McpServer,
    McpTool,
    MetricsSource,
    Policy,
    Runbook,
    Service,
    Silences,
    ToolStep,
    Trigger,
)
from opsbot.config.policy import alertmanagers as alertmanagers_module
from opsbot.config.policy import commands as commands_module
from opsbot.config.policy import configs as configs_module
from opsbot.config.policy import logtime as logtime_module
from opsbot.config.policy import mcp as mcp_module
from opsbot.config.policy import metrics as metrics_module
from opsbot.config.policy import runbooks as runbooks_module
from opsbot.config.policy import services as services_module

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "configuration.md"

# (title in the reference, YAML path, model, the text above its table)
SECTIONS: list[tuple[str, str, type[BaseModel], str]] = [
    ("The file", "", settings.FileConfig, ""),
    ("`llm`: the model client", "llm", settings.ModelSettings, ""),
    ("`loop`: how far one question may go", "loop", settings.LoopLimits, ""),
    ("`memory`: thread memory", "memory", settings.MemorySettings, ""),
    ("`memory.incidents`: incident memory", "memory.incidents", settings.IncidentMemory, ""),
    ("`slack`", "slack", settings.SlackSettings, ""),
    ("`alerts`", "alerts", settings.AlertSettings, ""),
    ("`runbooks`: runs left behind", "runbooks", settings.RunbookSettings, ""),
    ("`audit`", "audit", settings.AuditSettings, ""),
    ("`http`: `opsbot serve --http`", "http", settings.HttpSettings, ""),
    ("`mcp_serve`: `opsbot mcp-serve`", "mcp_serve", mcp_serve.McpServeSettings, inspect.getdoc(mcp_serve) or ""),
    ("`mcp_serve.tokens[]`: callers over HTTP", "mcp_serve.tokens[]", mcp_serve.CallerToken, ""),
    ("`mcp_serve.stdio`: the caller over stdio", "mcp_serve.stdio", mcp_serve.Caller, ""),
    ("`policy`", "policy", Policy, ""),
    ("`policy.services.<name>`", "policy.services.<name>", Service, inspect.getdoc(services_module) or ""),
    (
        "`policy.services.<name>.time`: how lines carry their time",
        "policy.services.<name>.time",
        LineTime,
        inspect.getdoc(logtime_module) or "",
    ),
    ("`policy.commands.<name>`", "policy.commands.<name>", Command, inspect.getdoc(commands_module) or ""),
    ("`policy.commands.<name>.params.<param>`", "policy.commands.<name>.params.<param>", commands_module.Parameter, ""),
    ("`policy.commands.<name>.limits`", "policy.commands.<name>.limits", commands_module.ResourceLimits, ""),
    (
        "`policy.config_files.<name>`: config roots",
        "policy.config_files.<name>",
        ConfigRoot,
        inspect.getdoc(configs_module) or "",
    ),
    (
        "`policy.metrics.<name>`: Prometheus-compatible sources",
        "policy.metrics.<name>",
        MetricsSource,
        inspect.getdoc(metrics_module) or "",
    ),
    (
        "`policy.alertmanagers.<name>`: alert state and silences",
        "policy.alertmanagers.<name>",
        AlertmanagerSource,
        inspect.getdoc(alertmanagers_module) or "",
    ),
    ("`policy.alertmanagers.<name>.silences`", "policy.alertmanagers.<name>.silences", Silences, ""),
    (
        "`policy.mcp.<server>`: MCP servers and their allowed tools",
        "policy.mcp.<server>",
        McpServer,
        inspect.getdoc(mcp_module) or "",
    ),
    ("`policy.mcp.<server>.tools.<tool>`", "policy.mcp.<server>.tools.<tool>", McpTool, ""),
    ("`access`, `approvers`: who may", "…access", Access, ""),
    ("A runbook file", "", Runbook, inspect.getdoc(runbooks_module) or ""),
    ("A runbook's `triggers[]`", "triggers[]", Trigger, ""),
    ("A tool step", "steps[]", ToolStep, ""),
    ("A branch step", "steps[]", BranchStep, ""),
    ("A branch's `when[]`", "steps[].branch[].when[]", Condition, ""),
    ("An approval step", "steps[]", ApprovalStep, ""),
    ("An approval step's `approval`", "steps[].approval", Gate, ""),
    ("An explain step", "steps[]", ExplainStep, ""),
]

# What a field means, for fields whose model gives no description (the models' own descriptions
# win). A field in neither fails the generator, so a new field cannot reach the reference unexplained.
DESCRIPTIONS = {
    "FileConfig.model": "the model name the endpoint knows (`OPSBOT_MODEL` wins over it)",
    "FileConfig.llm": "the model client: [below](#llm-the-model-client)",
    "FileConfig.loop": "limits of one question: [below](#loop-how-far-one-question-may-go)",
    "FileConfig.memory": "thread memory: [below](#memory-thread-memory)",
    "FileConfig.slack": "Slack mode: [below](#slack)",
    "FileConfig.alerts": "alert threads: [below](#alerts)",
    "FileConfig.runbooks": "runbook runs left behind by a process: [below](#runbooks-runs-left-behind)",
    "FileConfig.audit": "the audit trail kept in Redis: [below](#audit)",
    "FileConfig.http": "`opsbot serve --http`'s server: [below](#http-opsbot-serve---http)",
    "FileConfig.mcp_serve": "opsbot's tools served to other agents: [below](#mcp_serve-opsbot-mcp-serve)",
    "FileConfig.policy": "services, commands, config roots and runbooks: [below](#policy)",
    "ModelSettings.temperature": "sampling temperature (o-series and gpt-5 models get the server's default)",
    "ModelSettings.max_answer_tokens": "the longest reply asked for; a cut answer is continued once",
    "LoopLimits.max_parallel_tools": "tool calls of one model message run at once",
    "LoopLimits.tool_timeout_s": "per attempt of a tool call, then retried (`tool_retries`)",
    "Policy.services": "services by name: [below](#policyservicesname)",
    "Policy.commands": "diagnostic and write commands by name: [below](#policycommandsname)",
    "Policy.config_files": "config roots by name: [below](#policyconfig_filesname-config-roots)",
    "Policy.metrics": "metrics sources by name: [below](#policymetricsname-prometheus-compatible-sources)",
    "Policy.alertmanagers": "Alertmanagers by name: [below](#policyalertmanagersname-alert-state-and-silences)",
    "Policy.mcp": "MCP servers by name: [below](#policymcpserver-mcp-servers-and-their-allowed-tools)",
    "Service.description": "what the service is, shown by `services` and to the model",
    "Command.description": "what the command does, shown by `services` and to the model",
    "Command.timeout_s": "the command is killed whole (its process group) after this",
    "Command.max_output_bytes": "output kept, head and tail, the cut stated",
    "Command.risk": "`write`: never run by the model or `/ops run` alone, only after a person approves",
    "Command.limits": "resource limits, via prlimit(1): [below](#policycommandsnamelimits)",
    "Parameter.description": "what the value is, shown to the model",
    "ConfigRoot.description": "what the root holds, shown by `services` and to the model",
    "ConfigRoot.max_bytes": "a file is read up to this many bytes",
    "ConfigRoot.access": "who may read the root; default: anyone",
    "Access.users": "user ids (Slack `U…`, or the OS user in the terminal)",
    "Access.groups": "user-group ids (Slack `S…`)",
    "Access.channels": "channel ids (Slack `C…`)",
    "Runbook.id": "the runbook's name: `runbook show <id>`, `/ops runbook run <id>`",
    "Runbook.description": "what it is for, shown by `runbook list` and to the model",
    "Runbook.params": "typed parameters, as command parameters are (enum, pattern, or min/max)",
    "Runbook.triggers": "alerts that start it: [below](#a-runbooks-triggers)",
    "Runbook.steps": "run in order unless a branch or `on_failure` goes elsewhere",
    "Trigger.source": "which webhook's alerts match",
    "Trigger.channel": "Slack channel for the alert thread (default: `alerts.channel`)",
    "ToolStep.id": "the step's name, for `goto`, conditions and `{steps.ID.data.KEY}`",
    "ToolStep.tool": "the tool the step calls",
    "ToolStep.args": "the tool's arguments: literals, or exactly one `{params.NAME}` or `{steps.ID.data.KEY}`",
    "ToolStep.timeout_s": "per attempt, whatever the tool's own timeout",
    "ToolStep.retries": "for timeouts and unavailable tools",
    "BranchStep.id": "the step's name",
    "BranchStep.branch": "cases tried in order; the first whose conditions all hold goes to its `goto`",
    "Condition.step": "the (earlier) step whose result is judged",
    "Condition.path": "`status`, `error` (its error type) or `data.KEY...`",
    "Condition.op": "how the value at `path` is compared with `value`",
    "Condition.value": "what it is compared with",
    "ApprovalStep.id": "the step's name",
    "ApprovalStep.approval": "who may let the run go on: [below](#an-approval-steps-approval)",
    "Gate.timeout_s": "the request expires after this",
    "Gate.text": "the question the approvers see",
    "Gate.self_approval": "whether whoever started the run may approve",
    "ExplainStep.id": "the step's name",
    "Settings.openai_api_key": "model API key (not needed for local servers)",
    "Settings.openai_base_url": "any OpenAI-compatible endpoint (default: OpenAI's)",
    "Settings.redis_url": "Redis: required for `serve`; thread memory and the audit trail for `chat` and `ask` "
    "(default: in-process memory). One server, Sentinel or Cluster ([operations.md](operations.md#redis))",
    "Settings.slack_bot_token": "the bot token, `xoxb-…` (both Slack modes)",
    "Settings.slack_app_token": "the app-level token, `xapp-…` (Socket Mode)",
    "Settings.slack_signing_secret": "verifies every HTTP request (HTTP mode; forged or stale requests get 401)",
    "Settings.slack_api_url": "where the Web API is (default `https://slack.com/api/`; the tests point it at a fake)",
    "Settings.alertmanager_token": "turns `/hooks/alertmanager` on (bearer token)",
    "Settings.alertmanager_user": "with `ALERTMANAGER_PASSWORD`: turns `/hooks/alertmanager` on (basic auth)",
    "Settings.alertmanager_password": "see `ALERTMANAGER_USER`",
    "Settings.model": "the model name the endpoint knows",
    "Settings.config": "the YAML file",
}

INTRO = """\
# Configuration reference

<!-- Generated by docs/gen_config_reference.py from config/settings.py and config/policy/*.py;
     do not edit by hand (tests/test_docs.py fails when this file and the models differ). -->

Secrets and endpoints come from the environment; everything else from one YAML file
(`--config PATH` or `OPSBOT_CONFIG`; without one, the bundled sample in `config/sample/`). The
environment wins over the file, the file over the defaults. Nested values can be set from the
environment with `__`: `OPSBOT_LOOP__MAX_STEPS=5`, `OPSBOT_SLACK__LINK_DOMAINS='["grafana.acme.com"]'`.
Unknown keys are errors, reported by `opsbot check-config` with their file and line and the
closest known key.

The README walks through [an annotated file](../README.md#describing-your-own-services);
`config/sample/opsbot.yaml` is a whole one. Variables read outside these models (`PORT`,
`OTEL_EXPORTER_OTLP_ENDPOINT`) are in [operations.md](operations.md).
"""


def type_name(annotation: Any) -> str:
    """A field's type as a reader of YAML thinks of it."""
    origin = get_origin(annotation)
    if origin is Annotated:
        base, *meta = get_args(annotation)
        name = type_name(base)
        pattern = next((m.pattern for m in meta if getattr(m, "pattern", None)), None)
        return f"{name} matching `{pattern}`" if pattern and name == "string" else name
    if origin in (Union, types.UnionType):
        parts = [a for a in get_args(annotation) if a is not type(None)]
        name = " or ".join(dict.fromkeys(type_name(a) for a in parts))
        return name + (" or null" if len(parts) < len(get_args(annotation)) else "")
    if origin is Literal:
        return " | ".join(f"`{v}`" for v in get_args(annotation))
    if origin in (list, tuple, frozenset, set):
        args = [a for a in get_args(annotation) if a is not Ellipsis]
        return f"list of {type_name(args[0])}" if args else "list"
    if origin is dict:
        key, value = get_args(annotation)
        return "mapping" if value is Any else f"mapping of {type_name(value)}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "mapping"
    return {
        str: "string",
        int: "integer",
        float: "number",
        bool: "boolean",
        Path: "path",
        SecretStr: "secret string",
        ByteSize: "size (`512MiB`)",
        type(None): "null",
    }.get(annotation, getattr(annotation, "__name__", str(annotation)))


def bounds(field: FieldInfo) -> str:
    # annotated_types' constraint, the word for it, and the attribute holding its value
    words: list[tuple[type, str, str]] = [
        (Ge, "≥", "ge"),
        (Gt, ">", "gt"),
        (Le, "≤", "le"),
        (Lt, "<", "lt"),
        (MinLen, "at least", "min_length"),
        (MaxLen, "at most", "max_length"),
    ]
    found = []
    for meta in field.metadata:
        for kind, word, attribute in words:
            if isinstance(meta, kind):
                value = getattr(meta, attribute)
                unit = (" character" if field.annotation is str else " item") + ("" if value == 1 else "s")
                found.append(f"{word} {value}" + (unit if kind in (MinLen, MaxLen) else ""))
        if getattr(meta, "pattern", None):
            found.append(f"matching `{meta.pattern}`")
    return ", ".join(found)


def default(field: FieldInfo) -> str:
    if field.default_factory is not None:
        value = field.default_factory()  # type: ignore[call-arg]
    elif field.default is PydanticUndefined:
        return "**required**"
    else:
        value = field.default
    if isinstance(value, BaseModel):
        return "(below)" if type(value).model_fields else "{}"
    if value is None:
        return "none"
    if isinstance(value, (dict, list, tuple, frozenset, set)) and not value:
        return "{}" if isinstance(value, dict) else "[]"
    if isinstance(value, (frozenset, set)):
        return "`[" + ", ".join(json.dumps(item) for item in sorted(value)) + "]`"
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"`{value}`"


def cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def rows(model: type[BaseModel]) -> Iterator[str]:
    for name, field in model.model_fields.items():
        alias = field.validation_alias if isinstance(field.validation_alias, str) else None
        key = f"`{name}`" + (f" (`{alias}`)" if alias else "")
        kind = type_name(field.annotation)
        limits = bounds(field)
        described = describe(model, name, field)
        if limits:
            described = f"{described} ({limits})" if described else limits
        yield f"| {key} | {cell(kind)} | {cell(default(field))} | {cell(described)} |"


def table(model: type[BaseModel]) -> str:
    return "\n".join(["| key | type | default | description |", "|---|---|---|---|", *rows(model)])


def environment() -> str:
    model = settings.Settings
    prefix = model.model_config.get("env_prefix", "")
    lines = ["| variable | type | default | description |", "|---|---|---|---|"]
    for name, field in model.model_fields.items():
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            continue  # the YAML sections, below (each settable as OPSBOT_<SECTION>__<KEY>)
        variable = field.validation_alias if isinstance(field.validation_alias, str) else f"{prefix}{name}".upper()
        described = describe(model, name, field).removeprefix(f"{variable}: ")
        kind = cell(type_name(field.annotation))
        lines.append(f"| `{variable}` | {kind} | {cell(default(field))} | {cell(described)} |")
    return "\n".join(lines)


def describe(model: type[BaseModel], name: str, field: FieldInfo) -> str:
    described = field.description or DESCRIPTIONS.get(f"{model.__name__}.{name}")
    if not described:
        raise SystemExit(
            f"{model.__name__}.{name} has no description: give it one (Field(description=...)) "
            "or add it to DESCRIPTIONS in docs/gen_config_reference.py"
        )
    return described


def docstring(model: type[BaseModel]) -> str:
    own = model.__dict__.get("__doc__")
    return inspect.cleandoc(own) if own else ""


def reference() -> str:
    parts = [INTRO, "## Environment variables\n", environment(), ""]
    parts.append(
        "Every YAML key below can also be set as `OPSBOT_<SECTION>__<KEY>` (`OPSBOT_LLM__TIMEOUT_S=30`);"
        " `model` in the file is `OPSBOT_MODEL`.\n"
    )
    for title, path, model, text in SECTIONS:
        level = "##" if not path.startswith("steps") and not path.startswith("triggers") else "###"
        parts.append(f"{level} {title}\n")
        about = docstring(model)
        if path and path != "…access":
            parts.append(f"YAML: `{path}` · model: `{model.__module__.removeprefix('opsbot.')}.{model.__name__}`\n")
        else:
            parts.append(f"Model: `{model.__module__.removeprefix('opsbot.')}.{model.__name__}`\n")
        if about:
            parts.append(about + "\n")
        if text:
            parts.append(textwrap.dedent(text).strip() + "\n")
        parts.append(table(model) + "\n")
    return "\n".join(parts).rstrip() + "\n"


def main() -> None:
    OUT.write_text(reference(), encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
