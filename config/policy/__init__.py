"""The operator's policy: which services exist, where their logs are, what may be read and run,
which runbooks there are, and who may do what.

A module each: base (strict models, names, who is asking), services, logtime (how a service's
log lines carry their time), commands, configs (config roots), http (a server reached over HTTP:
url, headers from the environment, timeout, access), metrics (Prometheus-compatible sources),
alertmanagers (alert state and silences), mcp (MCP servers and their allowed tools), runbooks (the
runbook format), whole (the Policy that holds them all and the checks across them). Code outside
the package imports these names from here.
"""

from .alertmanagers import AlertmanagerSource, Silences
from .base import NAME_PATTERN, NAME_RULE, Access, Name, Principal, Strict
from .commands import Command, EnvName, check_values, control_character
from .configs import NEVER_READ, ConfigFile, ConfigRoot
from .http import HttpSource
from .logtime import STAMP_GROUP, LineTime, has_date, has_year, read_format
from .mcp import McpServer, McpTool, offered_name, server_of
from .metrics import MetricsSource
from .runbooks import (
    END,
    ApprovalStep,
    BranchStep,
    Condition,
    ExplainStep,
    Gate,
    Runbook,
    Template,
    ToolStep,
    Trigger,
    template_of,
)
from .services import Service
from .whole import FILLED_PARAMS, Policy, log_command_problem

__all__ = [
    "END",
    "FILLED_PARAMS",
    "STAMP_GROUP",
    "NAME_PATTERN",
    "NAME_RULE",
    "NEVER_READ",
    "Access",
    "AlertmanagerSource",
    "ApprovalStep",
    "BranchStep",
    "Command",
    "Condition",
    "ConfigFile",
    "ConfigRoot",
    "EnvName",
    "ExplainStep",
    "Gate",
    "HttpSource",
    "LineTime",
    "McpServer",
    "McpTool",
    "MetricsSource",
    "Name",
    "Policy",
    "Principal",
    "Runbook",
    "Service",
    "Silences",
    "Strict",
    "Template",
    "ToolStep",
    "Trigger",
    "check_values",
    "control_character",
    "has_date",
    "has_year",
    "log_command_problem",
    "offered_name",
    "read_format",
    "server_of",
    "template_of",
]
