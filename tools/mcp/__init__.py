"""Tools from MCP servers, under opsbot's policy (`policy.mcp`, config/policy/mcp.py).

- loop: the SDK's event loop on its own thread; sync callers wait with a deadline.
- link: one server: its session started when first needed (or at startup), its listed tools,
  calls, a crash noticed (`Down`, with what happened) and a restart after a backoff.
- hub: the servers of one process, stopped with opsbot.
- schema: a listed input schema checked (a JSON-schema object, valid, small) and a call's
  arguments checked against it with `jsonschema`.
- render: a tools/call answer as a ToolResult (text and structured content; images and binary
  said, not sent; `isError` -> failed).
- offer: the policy's gate: only listed tools, as `<server>__<tool>`; access; a write's call
  handed to tools/writes.py as an approval request, and made once approved (call_approved);
  LaterTools, a registry's MCP tools listed a server at a time (a call by name starts its server alone).
- write: McpWrite, a write call exactly as a person approves it, bound to the server by a digest.
- listing: the servers and their allowed tools for people (the direct command `mcp`), a server
  started only when it is named.

The MCP SDK is imported only when a server is started: a policy without MCP servers, and every
direct command, never pays for it.
"""

from .hub import McpHub, close_shared, shared_hub
from .link import Down, Listed
from .listing import servers_listing, show_listing
from .offer import LaterTools, OnWrite, call_approved, offered_tools, refusals
from .schema import MAX_SCHEMA_CHARS, argument_problems, typed
from .write import McpWrite

__all__ = [
    "LaterTools",
    "MAX_SCHEMA_CHARS",
    "Down",
    "Listed",
    "McpHub",
    "McpWrite",
    "OnWrite",
    "argument_problems",
    "call_approved",
    "close_shared",
    "offered_tools",
    "refusals",
    "servers_listing",
    "shared_hub",
    "show_listing",
    "typed",
]
