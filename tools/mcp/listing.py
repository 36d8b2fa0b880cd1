"""The MCP servers and their allowed tools, for people: the direct command `mcp`.

`mcp` starts nothing: it says of each server what is known (running, with its tools' descriptions
and arguments; down, with why; not started yet) and lists the tools the policy allows with their
risk. `mcp <server>` starts that one server when it is not running, so its tools can be described.
Whatever a server wrote (descriptions, its last words when it died) is redacted and made inert.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from ...config.policy import McpTool, Principal
from ..base import ToolResult
from .hub import McpHub
from .link import Down, Link, Listed
from .offer import refusals, server_text
from .schema import types_of

MAX_SHOWN_DESCRIPTION = 300


class ToolShown(BaseModel):
    name: str
    risk: Literal["read", "write"]
    about: str = ""  # the server's description, once it has listed its tools
    arguments: str = ""
    refused: str = ""  # why it is not offered: the server lacks it, or its schema
    not_yours: str = ""  # why the asker may not call it


class ServerShown(BaseModel):
    name: str
    about: str
    state: Literal["running", "down", "not started"]
    said: str = ""  # why it is down, or when it starts
    tools: list[ToolShown]


def servers_listing(hub: McpHub, server: str | None, principal: Principal | None) -> ToolResult:
    """Every server of `hub` as it is (none started), or `server` alone, started if it is not."""
    links = [hub.links[server]] if server is not None else list(hub.links.values())
    shown = [_server(link, link.tools() if server is not None else link.known(), principal) for link in links]
    return ToolResult.success({"servers": [entry.model_dump() for entry in shown]})


def _server(link: Link, known: dict[str, Listed] | Down | None, principal: Principal | None) -> ServerShown:
    listing = known if isinstance(known, dict) else None
    refused = refusals(link.spec, listing) if listing is not None else {}
    tools = [
        _tool(name, allowed, listing, refused.get(name, ""), principal) for name, allowed in link.spec.tools.items()
    ]
    if isinstance(known, Down):
        return ServerShown(
            name=link.name, about=link.spec.description, state="down", said=server_text(link.said(known)), tools=tools
        )
    if known is None:
        when = "at startup" if link.spec.start == "at_startup" else "when first needed"
        said = f"started {when}; `mcp {link.name}` starts it and describes its tools"
        return ServerShown(name=link.name, about=link.spec.description, state="not started", said=said, tools=tools)
    return ServerShown(name=link.name, about=link.spec.description, state="running", tools=tools)


def _tool(
    name: str, allowed: McpTool, listing: dict[str, Listed] | None, refused: str, principal: Principal | None
) -> ToolShown:
    listed = listing.get(name) if listing is not None else None
    shown = ToolShown(
        name=name, risk=allowed.risk, refused=refused, not_yours="; ".join(allowed.access.missing(principal))
    )
    if listed is not None and not refused:
        shown.about = server_text(listed.description, MAX_SHOWN_DESCRIPTION)
        shown.arguments = arguments_text(listed.input_schema)
    return shown


def arguments_text(schema: dict[str, Any]) -> str:
    """A tool's arguments in a line: each name, its types, and whether it is required."""
    required = set(schema.get("required", []))
    properties: dict[str, Any] = schema.get("properties", {})
    parts = []
    for key, prop in properties.items():
        kinds = "|".join(sorted(types_of(prop) - {"null"})) if isinstance(prop, dict) else ""
        parts.append(f"{key}" + (f" ({kinds}{', required' if key in required else ''})" if kinds else ""))
    return ", ".join(parts) or "none"


def show_listing(data: dict[str, Any]) -> str:
    """The listing as people read it: a server a paragraph, a tool a line (and its arguments')."""
    servers = [ServerShown.model_validate(entry) for entry in data.get("servers", [])]
    lines = ["MCP servers (call a tool: mcp <server> <tool> key=value ...):"]
    for server in servers:
        about = f" — {server.about}" if server.about else ""
        said = f": {server.said}" if server.said else ""
        lines.append(f"  {server.name} [{server.state}{said}]{about}")
        lines += [line for tool in server.tools for line in _tool_lines(tool)]
    return "\n".join(lines)


def _tool_lines(tool: ToolShown) -> list[str]:
    risk = "write: waits for a person's approval" if tool.risk == "write" else "read"
    head = f"    {tool.name} ({risk})"
    if tool.refused:
        return [f"{head}: {tool.refused}"]
    lines = [f"{head}: {tool.about}" if tool.about else head]
    if tool.arguments:
        lines.append(f"      arguments: {tool.arguments}")
    if tool.not_yours:
        lines.append(f"      not for you: {tool.not_yours}")
    return lines
