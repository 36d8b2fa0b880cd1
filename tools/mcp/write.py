"""A call of an MCP server's `risk: write` tool, exactly as it would be made: what a person
approves. Bound by its digest to the tool, its arguments and the server as the policy defines it
(its command or url, environment and headers named), so a policy change between the request and
the approval refuses the call."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel, ConfigDict

from ...config.policy import McpServer, offered_name


class McpWrite(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    server: str
    tool: str
    arguments: dict[str, Any]

    @property
    def name(self) -> str:
        return offered_name(self.server, self.tool)

    def shown(self) -> str:
        """The call in one line, as people see it: the tool and its arguments as JSON."""
        return f"{self.name} {json.dumps(self.arguments, ensure_ascii=False, sort_keys=True)}"

    def digest(self, spec: McpServer) -> str:
        server = spec.model_dump(mode="json", include={"command", "env", "url", "headers"})
        text = json.dumps({"server": server, "tool": self.tool, "arguments": self.arguments}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()
