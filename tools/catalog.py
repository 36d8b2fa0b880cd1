"""The ops tools an operator's policy provides."""

from __future__ import annotations

from config.policy import Policy
from tools.base import Tool
from tools.commands import run_command_tool
from tools.configs import read_config_tool
from tools.logs import query_logs_tool
from tools.runbooks import list_runbooks_tool, read_runbook_tool
from tools.services import list_services_tool


def ops_tools(policy: Policy) -> list[Tool]:
    return [
        list_services_tool(policy),
        query_logs_tool(policy),
        run_command_tool(policy),
        read_config_tool(policy),
        *([list_runbooks_tool(policy), read_runbook_tool(policy)] if policy.runbooks else []),
    ]
