"""`opsbot mcp-serve`: opsbot's own tools served to other agents over MCP (stdio or Streamable
HTTP), under the same policy as Slack users: the caller a principal (callers.py), the tools it may
use (access.py), every call through the executor and audited (door.py), a write put to a person
through the approvals service (desk.py: Slack in slack_desk.py, the terminal in terminal_desk.py),
the SDK's server in front (server.py, http.py), put together from settings (serving.py)."""

from .serving import DEFAULT_HTTP, Address, ServeError, address, serve

__all__ = ["DEFAULT_HTTP", "Address", "ServeError", "address", "serve"]
