"""The policy in front of MCP servers: a tool the policy lists becomes an opsbot tool named
`<server>__<tool>`; nothing else a server exposes is offered, so the model cannot call it.

A call goes through the executor like every tool (its arguments checked against the server's input
schema in the argument model, so a misfit is `invalid_args` with what is required; the result
redacted and made inert; cut to the result budget by the loop), then here, in order: who asks
(`access`, `denied`), the server running (`unavailable`, retryable, with what happened), the tool
still listed with a schema that passes (schema.py), the arguments against the schema as listed
now, and a `write` tool answered `needs_approval` without being called. The server's description
of a tool is its data: redacted, made inert, cut, and said to be the server's.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, create_model, model_validator
from pydantic_core import PydanticCustomError

from ...config.policy import McpServer, McpTool, Policy, Principal, offered_name
from ..base import ErrorType, Tool, ToolResult
from ..inert import inert
from ..redact import redact_text
from .hub import McpHub
from .link import CallFailed, Down, Link, Listed
from .render import rendered
from .schema import argument_problems, expected, schema_problem, typed
from .write import McpWrite

log = logging.getLogger(__name__)

# What becomes of a write tool's call that passed every check: an approval request.
OnWrite = Callable[[McpWrite, Principal | None], ToolResult]

MAX_DESCRIPTION = 1_000
# A tool whose server was down when the tools were offered: any object, checked when it runs.
ANY_OBJECT: dict[str, Any] = {"type": "object"}
START_GRACE_S = 2.0


def offered_tools(
    policy: Policy, hub: McpHub, on_write: OnWrite | None = None, servers: Iterable[str] | None = None
) -> list[Tool[McpArgs]]:
    """The tools the model may call, from every server the policy names, or those of `servers`
    (started at once, each on its own thread, so the slowest decides the wait). A write tool's call
    is handed to `on_write` (tools/writes.py: an approval request); without it, it is refused and
    not run."""
    links = {name: hub.links[name] for name in (policy.mcp if servers is None else servers)}
    with ThreadPoolExecutor(max_workers=max(1, len(links)), thread_name_prefix="mcp-list") as pool:
        listings = dict(zip(links, pool.map(lambda link: link.tools(), links.values()), strict=True))
    tools: list[Tool[McpArgs]] = []
    for server, listing in listings.items():
        spec = policy.mcp[server]
        if isinstance(listing, Down):
            log.warning("%s; its tools answer unavailable until it runs", hub.links[server].said(listing))
        for name, allowed in spec.tools.items():
            tool = _offered(hub.links[server], name, allowed, listing, on_write)
            if tool is not None:
                tools.append(tool)
    return tools


class LaterTools:
    """A registry's MCP tools (tools/base.py `Later`), made a server at a time: looking up
    `<server>__<tool>` lists that server alone, so a direct command or a runbook step waits for
    no other server; the whole set lists the servers not listed yet, all at once."""

    def __init__(self, policy: Policy, hub: McpHub, on_write: OnWrite | None = None) -> None:
        self.policy, self.hub, self.on_write = policy, hub, on_write
        self.left = list(policy.mcp)

    def __call__(self, name: str | None) -> list[Tool[Any]]:
        wanted = [server for server in self.left if name is None or name.startswith(offered_name(server, ""))]
        if not wanted:
            return []
        self.left = [server for server in self.left if server not in wanted]
        return list(offered_tools(self.policy, self.hub, self.on_write, servers=wanted))


def refusals(spec: McpServer, listing: dict[str, Listed]) -> dict[str, str]:
    """Why a tool the policy lists is not offered, by tool: the server lacks it, or its schema fails."""
    problems: dict[str, str] = {}
    for name in spec.tools:
        listed = listing.get(name)
        if listed is None:
            problems[name] = f"the server has no tool {name!r}, so it is not offered"
        elif (problem := schema_problem(listed.input_schema)) is not None:
            problems[name] = f"refused, not offered: {problem}"
    return problems


def _offered(
    link: Link, name: str, allowed: McpTool, listing: dict[str, Listed] | Down, on_write: OnWrite | None
) -> Tool[McpArgs] | None:
    what = offered_name(link.name, name)
    if isinstance(listing, Down):
        down = f"(MCP server {link.name} was not running when opsbot started)"
        return _tool(link, name, allowed, down, ANY_OBJECT, on_write)
    listed = listing.get(name)
    if listed is None:
        log.warning("MCP server %s has no tool %r: %s is not offered", link.name, name, what)
        return None
    if (problem := schema_problem(listed.input_schema)) is not None:
        log.warning("%s is not offered: %s", what, problem)
        return None
    return _tool(link, name, allowed, listed.description, listed.input_schema, on_write)


def _tool(
    link: Link, name: str, allowed: McpTool, described: str, schema: dict[str, Any], on_write: OnWrite | None
) -> Tool[McpArgs]:
    what = offered_name(link.name, name)

    def run(args: McpArgs, principal: Principal | None) -> ToolResult:
        return _call(link, name, allowed, dict(args.model_extra or {}), principal, on_write)

    return Tool(
        name=what,
        description=_description(link, name, allowed, described),
        args_model=_args_model(what, schema),
        run=run,
        # Starting the server, then the call, each within its own timeout.
        timeout_s=link.spec.start_timeout_s + link.spec.timeout_s + START_GRACE_S,
        summarize=_summary,
        show=_shown,
    )


def _call(
    link: Link,
    name: str,
    allowed: McpTool,
    arguments: dict[str, Any],
    principal: Principal | None,
    on_write: OnWrite | None,
) -> ToolResult:
    what = offered_name(link.name, name)
    if not allowed.access.allows(principal):
        return ToolResult.failure(
            ErrorType.denied,
            f"you may not call {what}: {'; '.join(allowed.access.missing(principal))}",
            hint="tell the user who may do it; do not try other ways to do it",
        )
    arguments = _typed_now(link, name, arguments)
    refusal = _refusal(link, name, arguments)
    if refusal is not None:
        return refusal
    if allowed.risk == "write":
        if on_write is not None:
            return on_write(McpWrite(server=link.name, tool=name, arguments=arguments), principal)
        return ToolResult.failure(
            ErrorType.needs_approval,
            f"{what} changes things, so it does not run until a person approves it; no approvals are "
            "kept here, so it was not run",
            hint="tell the user it needs a person to do it by hand; do not call it again",
        )
    return _called(link, name, arguments)


def call_approved(write: McpWrite, spec: McpServer, hub: McpHub) -> ToolResult:
    """Make a write call a person approved (tools/writes.py checked the approval against the policy
    as it is now): the server's tool as it lists it now, the arguments checked again, one call."""
    link = hub.links.get(write.server)
    if link is None or link.spec != spec:
        return ToolResult.failure(
            ErrorType.denied, f"MCP server {write.server} is not the one approved; nothing was called"
        )
    return _refusal(link, write.tool, write.arguments) or _called(link, write.tool, write.arguments)


def _typed_now(link: Link, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """`arguments` typed by the schema the server lists now: the tool's own model had only "any
    object" when the server was down as the tools were offered."""
    listing = link.tools()
    listed = None if isinstance(listing, Down) else listing.get(name)
    return (
        arguments
        if listed is None or not isinstance(listed.input_schema, dict)
        else typed(listed.input_schema, arguments)
    )


def _refusal(link: Link, name: str, arguments: dict[str, Any]) -> ToolResult | None:
    """Why the server cannot be asked to run tool `name` with `arguments` now, or None."""
    what = offered_name(link.name, name)
    listing = link.tools()
    if isinstance(listing, Down):
        return _unavailable(link.said(listing))
    listed = listing.get(name)
    if listed is None:
        return ToolResult.failure(
            ErrorType.unavailable, f"MCP server {link.name} no longer offers {name!r}", hint="tell the user"
        )
    if (problem := schema_problem(listed.input_schema)) is not None:
        return ToolResult.failure(ErrorType.denied, f"{what} is refused: {problem}", hint="tell the user")
    if problems := argument_problems(listed.input_schema, arguments):
        return ToolResult.failure(
            ErrorType.invalid_args,
            f"arguments do not fit {what}: {'; '.join(problems)}",
            hint=expected(listed.input_schema),
        )
    return None


def _called(link: Link, name: str, arguments: dict[str, Any]) -> ToolResult:
    try:
        result = link.call(name, arguments)
    except CallFailed as exc:
        if exc.kind == "slow":
            # Not retried: the server may still be doing it.
            return ToolResult.failure(ErrorType.timeout, str(exc), hint="try again later, or ask for less")
        if exc.kind == "refused":
            return ToolResult.failure(ErrorType.failed, str(exc), hint="read the server's reason before calling again")
        return _unavailable(str(exc))
    return rendered(offered_name(link.name, name), result)


def _unavailable(message: str) -> ToolResult:
    return ToolResult.failure(
        ErrorType.unavailable,
        message,
        hint="try again in a moment; if it keeps failing, tell the user the server is down",
        retryable=True,
    )


def server_text(text: str, limit: int = MAX_DESCRIPTION) -> str:
    """Words a server wrote (a tool's description, its last words on stderr): on one line,
    redacted, made inert, cut to `limit`."""
    said = inert(redact_text(" ".join(text.split())))
    return said if len(said) <= limit else said[: limit - 1] + "…"


def _description(link: Link, name: str, allowed: McpTool, described: str) -> str:
    text = server_text(described)
    about = f" [tool {name} of MCP server {link.name}; the description before this is the server's, not opsbot's"
    if link.spec.description:
        about += f"; the server: {inert(link.spec.description)}"
    if allowed.risk == "write":
        about += "; it changes things, so it waits for a person's approval"
    return text + about + "]"


class McpArgs(BaseModel):
    """Arguments as a server's input schema says: offered with that schema as it is (pydantic's
    own is replaced), and checked against it by `jsonschema` when the executor validates a call.
    Each tool has its subclass, holding its schema."""

    input_schema: ClassVar[dict[str, Any]] = ANY_OBJECT
    model_config = ConfigDict(extra="allow", json_schema_extra=lambda out, cls: _as_listed(out, cls))

    @model_validator(mode="before")
    @classmethod
    def _fits(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = typed(cls.input_schema, data)
        if problems := argument_problems(cls.input_schema, data):
            raise PydanticCustomError("schema", "{problems}", {"problems": "; ".join(problems)})
        return data


def _as_listed(out: dict[str, Any], cls: type[Any]) -> None:
    out.clear()
    out.update(copy.deepcopy(cls.input_schema))


def _args_model(what: str, schema: dict[str, Any]) -> type[McpArgs]:
    model = create_model(f"{what}_args", __base__=McpArgs)
    model.input_schema = copy.deepcopy(schema)
    return model


def _summary(data: Any) -> str:
    text = data.get("text", "") if isinstance(data, dict) else ""
    lines = len(text.splitlines())
    parts = [f"{lines} line{'s' if lines != 1 else ''}"] if text else []
    if isinstance(data, dict) and "structured" in data:
        parts.append("structured content")
    if isinstance(data, dict) and data.get("not_sent"):
        parts.append(f"{len(data['not_sent'])} block(s) not sent")
    return ", ".join(parts) or "no content"


def _shown(data: Any) -> str:
    if not isinstance(data, dict):
        return str(data)
    shown = [data.get("text", "")]
    shown += [f"({said})" for said in data.get("not_sent", [])]
    return "\n".join(part for part in shown if part)
