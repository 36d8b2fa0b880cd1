"""Building an agent from settings: the one place that decides which backends are used."""

from __future__ import annotations

import os

from ..config.policy import Policy, Principal
from ..config.settings import FallbackModel, Settings
from ..tools.base import Registry, ToolResult
from ..tools.catalog import ops_tools
from ..tools.mcp import LaterTools, McpWrite, shared_hub
from ..tools.writes import mcp_needs_approval
from .agent import Agent, Recollection
from .incidents import IncidentStore, InProcessIncidents
from .llm import Fallbacks, Model, ModelClient, Protocol
from .memory import InProcessMemory, Memory
from .telemetry.audit import AuditReader, InProcessAudit, RedisAudit


def build_model(settings: Settings) -> Model | None:
    """The configured model, with its fallbacks when `llm.fallbacks` names any."""
    primary = build_client(settings)
    if primary is None or not settings.llm.fallbacks:
        return primary
    return Fallbacks(primary, [_fallback(settings, fallback) for fallback in settings.llm.fallbacks])


def build_client(settings: Settings) -> ModelClient | None:
    """The configured model alone: what `check-config --model` and `opsbot eval` ask."""
    if not settings.model_configured:
        return None
    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
    return _client(settings, settings.model, settings.openai_base_url, key)


def _fallback(settings: Settings, fallback: FallbackModel) -> ModelClient:
    key = os.environ.get(fallback.api_key_env) if fallback.api_key_env else None
    if fallback.api_key_env is None and settings.openai_api_key is not None:
        key = settings.openai_api_key.get_secret_value()
    return _client(settings, fallback.model, fallback.base_url or settings.openai_base_url, key)


def _client(settings: Settings, model: str, base_url: str | None, api_key: str | None) -> ModelClient:
    return ModelClient(
        model=model,
        base_url=base_url,
        api_key=api_key,
        timeout_s=settings.llm.timeout_s,
        max_retries=settings.llm.max_retries,
        temperature=settings.llm.temperature,
        max_answer_tokens=settings.llm.max_answer_tokens,
        protocol=Protocol(settings.llm.protocol),
        extra_body=settings.llm.extra_body,
        stream=settings.llm.stream,
        stream_idle_timeout_s=settings.llm.stream_idle_timeout_s,
    )


def build_memory(settings: Settings) -> Memory:
    if settings.redis_url:
        # Only here: redis-py is a tenth of a second of imports a terminal without Redis never needs.
        from .memory.redis import RedisMemory

        return RedisMemory(settings.redis_url, ttl_s=settings.memory.ttl_s)
    return InProcessMemory(ttl_s=settings.memory.ttl_s)


def build_audit(settings: Settings) -> InProcessAudit | RedisAudit:
    """Audit records on their logger, and kept for the handoff: with Redis there for
    `audit.ttl_s`, else in this process."""
    if settings.redis_url:
        from .redis.client import connect

        return RedisAudit(connect(settings.redis_url), settings.audit.ttl_s)
    return InProcessAudit()


def build_recollection(settings: Settings, audit: AuditReader) -> Recollection:
    """Incident memory, kept in Redis when there is one; the handoff reads the audit trail and
    runbook runs whether or not `memory.incidents.enabled` records and recalls incidents."""
    incidents = settings.memory.incidents
    if not settings.redis_url:
        return Recollection(incidents, policy=settings.policy, store=InProcessIncidents(), audit=audit)
    # Only here: Redis's client, and the runbook runs a handoff reads, are no direct command's business.
    from .incidents.redis import RedisIncidents
    from .redis.client import connect
    from .runbooks import RedisRunStore

    store: IncidentStore = RedisIncidents(connect(settings.redis_url))
    runs = RedisRunStore(settings.redis_url)
    return Recollection(incidents, policy=settings.policy, store=store, audit=audit, runs=runs.load)


def build_tools(settings: Settings) -> Registry:
    """The ops tools, and the tools of the policy's MCP servers: those are listed by the servers
    when the model is first told its tools, or one server's when one of its tools is called by
    name (a direct command, a runbook step), so no other direct command starts any of them (a
    server with `start: at_startup` starts now, in the background)."""
    policy = settings.policy
    if not policy.mcp:
        return Registry(ops_tools(policy))
    hub = shared_hub(policy.mcp)
    hub.start_eager()

    def asked(write: McpWrite, principal: Principal | None) -> ToolResult:
        return mcp_needs_approval(policy, write, principal)

    return Registry(ops_tools(policy), later=LaterTools(policy, hub, on_write=asked))


def build_agent(settings: Settings) -> Agent:
    audit = build_audit(settings)
    return Agent(
        model=build_model(settings),
        memory=build_memory(settings),
        tools=build_tools(settings),
        limits=settings.loop,
        memory_settings=settings.memory,
        audit=audit,
        recollection=build_recollection(settings, audit),
        subjects=subjects(settings.policy),
    )


def subjects(policy: Policy) -> list[str]:
    """What a question may name that the tools can look at: the policy's services and config roots."""
    return [*policy.services, *policy.config_files]
