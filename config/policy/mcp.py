"""MCP servers whose tools the model may call, one entry under `policy.mcp`, and only the tools
listed under `tools:` (an allowlist: a tool the server exposes but the policy does not list is
never offered to the model):

```yaml
mcp:
  git:                                        # tools are offered as git__<tool>
    description: the deploy repository
    command: [/opt/mcp/bin/mcp-server-git, --repository, /srv/deploy]   # stdio, no shell
    env: [GIT_AUTHOR_NAME]                    # variables passed on by name; nothing else is
    timeout_s: 30                             # per call (start_timeout_s: for starting it)
    start: on_demand                          # or at_startup
    tools:
      git_status: {risk: read}
      git_log: {risk: read, access: {groups: [oncall]}}
      git_commit: {risk: write, approvers: {groups: [sre]}}   # runs once a person approves it
  grafana:
    url: https://mcp.example.com/mcp          # Streamable HTTP
    headers: {Authorization: GRAFANA_MCP_AUTH}   # header -> the environment variable holding its value
    tools:
      search_dashboards: {risk: read}
```

A `risk: write` tool is called only once a person approves that exact call (the tool and its
arguments, bound to the server as the policy defines it then), like a write command: `approvers`
(default: `access`), `self_approval` (default false) and `approval_ttl_s` (default 900).

Exactly one of `command` and `url`. A server started from `command` gets only the variables
`env` names, plus the basics the MCP SDK passes to every server it starts (HOME, LOGNAME, PATH,
SHELL, TERM, USER): none of opsbot's own secrets (the model's key, Slack's tokens) reach it. A
relative program path is resolved against the directory of the YAML file, like every path of the
policy; a bare name is looked up on PATH. Header and `env` values are never written in the YAML:
a variable that is not set where opsbot runs is a clear refusal of that server's tools.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, StringConstraints, model_validator

from .base import Access, Strict, absolute
from .commands import EnvName
from .http import HeaderName, HttpUrl

# A server's tools are offered as <server>__<tool>, and a model's function names allow only
# [A-Za-z0-9_-] up to 64 characters: no '.' in a server's name, no '__' inside it or at its end,
# so the name a tool is offered under says which server it comes from.
ServerName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]+(?:[_-][a-z0-9]+)*$", max_length=30)]
McpToolName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
SEPARATOR = "__"
MAX_OFFERED_NAME = 64


class McpTool(Strict):
    risk: Literal["read", "write"] = Field(
        description="read: runs when the model calls it; write: waits for a person's approval first"
    )
    access: Access = Field(default_factory=Access, description="who may call this tool; default: anyone")
    approvers: Access | None = Field(default=None, description="who may approve a write; default: `access`")
    self_approval: bool = Field(default=False, description="whether the asker may approve their own request")
    approval_ttl_s: float = Field(default=900, gt=0, le=86_400, description="how long an approval request is valid")

    @property
    def deciders(self) -> Access:
        """Who may approve (or deny) a call of a write tool: `approvers`, or else whoever may call it."""
        return self.approvers if self.approvers is not None else self.access


class McpServer(Strict):
    description: str = Field(default="", description="what the server reaches, shown to the model")
    command: list[Annotated[str, StringConstraints(min_length=1)]] | None = Field(
        default=None,
        min_length=1,
        description="argv of a stdio server, program first; run without a shell",
    )
    env: list[EnvName] = Field(
        default_factory=list,
        description="environment variables passed to a command's server by name (their values are "
        "read where opsbot runs); the rest of opsbot's environment is not",
    )
    url: HttpUrl | None = Field(default=None, description="the endpoint of a Streamable HTTP server")
    headers: dict[HeaderName, EnvName] = Field(
        default_factory=dict,
        description="headers sent to a url's server, each naming the environment variable that holds "
        "its value (Authorization: MCP_AUTH); never the value itself",
    )
    timeout_s: float = Field(default=30.0, gt=0, le=600, description="per call")
    start_timeout_s: float = Field(
        default=30.0, gt=0, le=600, description="for starting the server and listing its tools"
    )
    start: Literal["on_demand", "at_startup"] = Field(
        default="on_demand",
        description="on_demand: started when its tools are first needed; at_startup: started as opsbot "
        "starts serving or chatting",
    )
    tools: dict[McpToolName, McpTool] = Field(
        min_length=1, description="the allowlist: tools offered to the model, each with its risk"
    )

    @model_validator(mode="after")
    def _one_transport(self) -> McpServer:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of `command` (a stdio server) and `url` (Streamable HTTP)")
        if self.env and self.command is None:
            raise ValueError("`env` is for a server started from `command`; a url's server takes `headers`")
        if self.headers and self.url is None:
            raise ValueError("`headers` are for a `url` server; a command's server takes `env`")
        return self

    def resolved(self, base: Path) -> McpServer:
        """A relative program path (one with a '/') made absolute against `base`; a bare name is
        left for PATH."""
        if self.command is None or "/" not in self.command[0]:
            return self
        program = str(absolute(Path(self.command[0]), base))
        return self.model_copy(update={"command": [program, *self.command[1:]]})


def offered_name(server: str, tool: str) -> str:
    """The name the model calls a server's tool by."""
    return f"{server}{SEPARATOR}{tool}"


def server_of(name: str) -> str:
    """The server an offered name's tool belongs to (a server's name holds no `__`)."""
    return name.partition(SEPARATOR)[0]


def long_names(servers: dict[str, McpServer]) -> list[str]:
    """Offered names longer than a model accepts, for the policy check."""
    return [
        name
        for server, spec in servers.items()
        for tool in spec.tools
        if len(name := offered_name(server, tool)) > MAX_OFFERED_NAME
    ]
