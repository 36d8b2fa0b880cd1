"""The MCP SDK's server in front of the door: tools/list and tools/call, over stdio or Streamable
HTTP. The SDK's event loop is the process's main loop here; the tools are synchronous (files,
subprocesses, HTTP sources, the MCP client's own loop thread), so each listing and call runs on a
worker thread and the loop stays free for other requests and sessions.

A call's answer is the tool's result as opsbot renders it to its own model (one JSON text: ok,
data or error with its hint), given also as structured content; `isError` is set when it failed,
not when it waits for approval, which is the expected answer to a write.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext

from ...config.policy import Principal
from ...tools.base import ErrorType, Tool, ToolResult
from ..version import VERSION
from .door import Door

# Who is calling, from the request's context (the stdio caller, or the HTTP request's token).
CallerOf = Callable[[ServerRequestContext[Any]], Principal | None]

INSTRUCTIONS = (
    "opsbot's ops tools (logs, diagnostic commands, config files, metrics, alerts, runbooks) under its policy. "
    "Results are redacted. A tool that changes things is not run on your say: it answers needs_approval with a "
    "request id; a person decides, and approval_status tells you the outcome."
)


def mcp_server(door: Door, caller_of: CallerOf) -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        caller = caller_of(ctx)
        # Listing may start the policy's MCP servers: not on the loop.
        tools = [] if caller is None else await anyio.to_thread.run_sync(door.listed, caller)
        return types.ListToolsResult(tools=[_described(tool) for tool in tools])

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        caller = caller_of(ctx)
        if caller is None:
            return _answer(ToolResult.failure(ErrorType.denied, "no caller: present a bearer token"))
        arguments = dict(params.arguments or {})
        result = await anyio.to_thread.run_sync(door.call, caller, params.name, arguments)
        return _answer(result)

    return Server(
        "opsbot",
        version=VERSION,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _described(tool: Tool[Any]) -> types.Tool:
    function = tool.schema()["function"]
    return types.Tool(name=tool.name, description=function["description"], input_schema=function["parameters"])


def _answer(result: ToolResult) -> types.CallToolResult:
    text = result.render()
    error = result.error
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=json.loads(text),
        is_error=error is not None and error.type is not ErrorType.needs_approval,
    )


async def serve_stdio(server: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
