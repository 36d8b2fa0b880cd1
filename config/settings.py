"""Settings: environment variables for secrets and endpoints, one YAML file for everything else.

The environment wins over the YAML file, the file over defaults. Nested values can come from
the environment too, with `__`: `OPSBOT_LOOP__MAX_STEPS=5`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import ConfigDict, Field, SecretStr, StringConstraints, ValidationError, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from .check import load_yaml_model
from .mcp_serve import McpServeSettings
from .policy import Policy, Strict
from .redis_url import parse_redis_url
from .runbooks import load_runbooks
from .wording import worded

SAMPLE_CONFIG = Path(__file__).parent / "sample" / "opsbot.yaml"


class FallbackModel(Strict):
    """Another model asked while the configured one is unavailable (down, timing out, 5xx, 429
    past its retries); never instead of fixing a configuration error."""

    model: str = Field(min_length=1, max_length=200, description="the model's name at that endpoint")
    base_url: str | None = Field(
        default=None,
        pattern=r"^https?://\S+$",
        description="its OpenAI-compatible endpoint (http://host:port/v1); default: OPENAI_BASE_URL",
    )
    api_key_env: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="the environment variable holding its API key (never the key itself); default: OPENAI_API_KEY",
    )


class ModelSettings(Strict):
    timeout_s: float = Field(default=60.0, gt=0, description="per request to the model API")
    max_retries: int = Field(
        default=2, ge=0, le=10, description="client retries on 429/5xx/timeouts and on an error event inside a stream"
    )
    temperature: float = Field(default=0.0, ge=0, le=2)
    max_answer_tokens: int = Field(default=1024, gt=0)
    protocol: Literal["auto", "native", "react", "json"] = Field(
        default="auto",
        description="how tool calls are exchanged: native function calling, ReAct or one-JSON-object text for "
        "servers without it, or auto (native, switching to ReAct for an endpoint that refuses tools)",
    )
    stream: bool = Field(default=True, description="stream replies, so answers show as they are written")
    stream_idle_timeout_s: float = Field(
        default=30.0,
        gt=0,
        le=600,
        description="a stream that sends nothing for this long is given up and asked again once",
    )
    extra_body: dict[str, Any] = Field(
        default_factory=dict,
        description="server-specific request fields passed through as they are (vLLM, Ollama, LiteLLM options)",
    )
    fallbacks: list[FallbackModel] = Field(
        default_factory=list,
        max_length=5,
        description="other models tried in order while the configured one is unavailable; the configured one is "
        "asked again at most once a minute and answers again as soon as it can",
    )


class LoopLimits(Strict):
    max_steps: int = Field(default=8, ge=1, le=50, description="model calls per user message")
    time_budget_s: float = Field(default=120.0, gt=0, description="wall clock per user message")
    max_calls_per_step: int = Field(
        default=8, ge=1, le=64, description="distinct tool calls run per model message; the rest are refused"
    )
    max_calls_per_run: int = Field(
        default=24, ge=1, le=500, description="tool calls run per user message; then tools are withdrawn"
    )
    max_parallel_tools: int = Field(default=4, ge=1, le=32)
    tool_timeout_s: float = Field(default=30.0, gt=0)
    tool_retries: int = Field(default=2, ge=0, le=10, description="for timeouts and connection errors")
    tool_retry_backoff_s: float = Field(default=0.2, ge=0, description="first backoff; doubles per retry")
    max_result_tokens: int = Field(default=1000, ge=50, description="a tool result is cut to this")
    max_prompt_tokens: int = Field(
        default=24_000, ge=1000, description="estimated size of one model request; older context gives way first"
    )
    repeat_warnings: int = Field(
        default=1, ge=1, description="identical calls answered with repeated_call; the next one stops the loop"
    )
    near_repeat_limit: int = Field(
        default=4, ge=2, description="calls of one tool varying a single argument before a nudge"
    )


class IncidentMemory(Strict):
    """Incident memory (bot/incidents/, docs/incidents.md): a finished thread leaves a redacted
    record that later questions and alerts are matched against."""

    enabled: bool = Field(default=False, description="keep incident records and recall them")
    channels: frozenset[str] = Field(
        default=frozenset({"*"}),
        description='channel ids whose threads are recorded and recalled in, "*" for every channel (DMs only '
        "when listed by id; the terminal is `cli`)",
    )
    ttl_days: int = Field(default=90, ge=1, le=3650, description="a record is forgotten this long after its thread")
    min_score: float = Field(
        default=0.45,
        gt=0,
        le=1,
        description="the weakest match recalled: the share of the question's rarity-weighted terms a record "
        "must hold; below it recall abstains",
    )
    max_shown: int = Field(default=3, ge=1, le=10, description="strong matches shown and given to the model")

    def covers(self, channel: str | None) -> bool:
        """Whether threads of `channel` are recorded: listed, or any channel but a DM under "*"."""
        if not self.enabled:
            return False
        if channel is not None and channel in self.channels:
            return True
        return "*" in self.channels and channel is not None and not channel.startswith("D")


class MemorySettings(Strict):
    window_tokens: int = Field(default=3000, ge=200, description="recent turns kept verbatim")
    summary_tokens: int = Field(default=400, ge=50, description="cap on the running summary")
    ttl_s: int = Field(default=7 * 24 * 3600, ge=60, description="a thread is forgotten after this idle time")
    lock_ttl_s: float = Field(default=300.0, gt=0, description="a run's lock expires after this")
    lock_wait_s: float = Field(default=10.0, ge=0, description="wait for another run in the thread")
    incidents: IncidentMemory = Field(
        default_factory=IncidentMemory,
        description="incident records and recall across threads",
    )


class SlackSettings(Strict):
    workers: int = Field(default=64, ge=1, le=512, description="agent runs at once in one process")
    backlog: int = Field(
        default=64, ge=0, description="runs waiting for a worker here; beyond, jobs wait in Redis for any process"
    )
    drain_lease_s: float = Field(
        default=15.0,
        gt=0,
        le=60,
        description="a process drains a thread under a lease it renews every third of this; a dead "
        "process's threads are taken over this long (and at most a third more) after it died",
    )
    stream: bool = Field(default=True, description="stream steps and answer into one message where Slack allows")
    post_interval_s: float = Field(
        default=1.0,
        ge=0,
        le=10,
        description="the least time between two of opsbot's posts in one channel, shared by every process "
        "on the Redis (Slack takes about one a second per channel); 0: unpaced",
    )
    thread_context_messages: int = Field(
        default=20, ge=0, le=200, description="earlier messages read when mentioned in an existing thread"
    )
    thread_context_chars: int = Field(default=6000, ge=0, description="cap on that earlier thread text")
    allowed_bots: frozenset[str] = Field(
        default=frozenset(), description="bot ids whose messages opsbot answers (others are ignored)"
    )
    allowed_teams: frozenset[str] = Field(
        default=frozenset(), description="other teams (Slack Connect, Enterprise Grid) whose people may use opsbot"
    )
    dedupe_ttl_s: int = Field(default=3600, ge=60, description="how long a delivered event is remembered")
    max_output_chars: int = Field(
        default=2800, ge=200, le=2800, description="direct command output shown in one message (Slack: 3000)"
    )
    link_domains: frozenset[str] = Field(
        default=frozenset(),
        description="host names whose links stay clickable in what opsbot posts, each with its subdomains "
        "(e.g. grafana.acme.com, wiki.acme.com); any other link in text opsbot did not write (the model's, a "
        "log line's, an alert's) is posted as plain text, without its query string",
    )
    common_questions: list[Annotated[str, StringConstraints(min_length=1, max_length=300)]] = Field(
        default_factory=list,
        max_length=20,
        description='questions on-call people often ask (e.g. "What changed in the last hour?"): the first '
        "ones are offered as suggested prompts in opsbot's Messages tab, before prompts made from the services "
        "and runbooks each person may use",
    )

    @field_validator("link_domains")
    @classmethod
    def _link_domains(cls, domains: frozenset[str]) -> frozenset[str]:
        names = frozenset(host_name(domain) for domain in domains)
        for name in sorted(names):
            if "." not in name:
                # A subdomain of a listed name is listed too: `com` would leave every .com link clickable.
                raise ValueError(
                    f"{name!r} is a whole top-level domain, so every host under it would stay clickable; "
                    f"list your own domain or host, e.g. acme.{name}"
                )
        return names


_LABEL = re.compile(r"(?!-)[a-z0-9-]{1,63}(?<!-)")


def host_name(value: str) -> str:
    """`value` as a host name is compared: lower case, IDNA (punycode), no trailing dot; a
    ValueError that says what to write instead for anything else (a URL, a path, a port, a wildcard)."""
    name = value.strip().lower().removesuffix(".")
    if "://" in name or any(c in name for c in "/?#@:*"):
        try:
            host = urlsplit(name if "://" in name else "//" + name.lstrip("*.")).hostname or "its host"
        except ValueError:  # an unclosed IPv6 bracket, say
            host = "its host"
        raise ValueError(
            f"{value!r} is not a host name; write the host alone, e.g. {host} (its subdomains are included)"
        )
    invalid = ValueError(f"{value!r} is not a valid host name (letters, digits and hyphens, dot-separated)")
    try:
        name = name.encode("idna").decode("ascii")
    except UnicodeError as exc:
        raise invalid from exc
    if len(name) > 253 or not all(_LABEL.fullmatch(label) for label in name.split(".")):
        raise invalid
    return name


class AlertSettings(Strict):
    channel: str | None = Field(
        default=None,
        pattern=r"^[CG][A-Z0-9]{2,}$",
        description="Slack channel for alert threads a trigger names none for",
    )
    first_look: bool = Field(default=True, description="an alert no runbook matches gets the model's first look")
    max_runs_per_group: int = Field(
        default=5,
        ge=1,
        le=100,
        description="runbook runs one alert group may start (one per distinct set of parameters); "
        "the group's message lists the alerts past it as not run",
    )


class RunbookSettings(Strict):
    lease_ttl_s: float = Field(
        default=60.0, gt=0, description="a run whose process stopped is taken over this long after its last step"
    )
    recover_every_s: float = Field(default=30.0, gt=0, description="how often runs left behind are looked for")


class HttpSettings(Strict):
    """`opsbot serve --http`'s server (waitress): sized for webhook bursts. A webhook only queues
    its alert, so each request takes milliseconds; a storm's notifications wait their turn in the
    listen backlog and the task queue rather than being refused."""

    threads: int = Field(default=16, ge=1, le=256, description="requests handled at once")
    backlog: int = Field(default=1024, ge=16, le=65535, description="connections the kernel holds before accept")
    connection_limit: int = Field(
        default=256, ge=16, le=10000, description="open connections at once; past it new ones wait in the backlog"
    )


class AuditSettings(Strict):
    ttl_s: int = Field(
        default=7 * 24 * 3600, ge=3600, description="how long Redis keeps audit records (the log keeps its own)"
    )


class FileConfig(Strict):
    """Everything one YAML file may hold. Secrets are not among it: they come from the environment."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str | None = None
    llm: ModelSettings = Field(default_factory=ModelSettings)
    loop: LoopLimits = Field(default_factory=LoopLimits)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    slack: SlackSettings = Field(default_factory=SlackSettings)
    alerts: AlertSettings = Field(default_factory=AlertSettings)
    runbooks: RunbookSettings = Field(default_factory=RunbookSettings)
    audit: AuditSettings = Field(default_factory=AuditSettings)
    http: HttpSettings = Field(default_factory=HttpSettings)
    mcp_serve: McpServeSettings = Field(default_factory=McpServeSettings)
    policy: Policy = Field(default_factory=Policy)


def load_file_config(path: Path) -> FileConfig:
    """Parse and validate the file; raise `config.check.ConfigError` with every problem found."""
    return load_yaml_model(path, FileConfig)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="OPSBOT_",
        env_nested_delimiter="__",
        env_ignore_empty=True,  # `OPENAI_API_KEY=` from a template means "not set", not "empty key"
        extra="ignore",
        frozen=True,
        populate_by_name=True,
    )

    openai_api_key: SecretStr | None = Field(default=None, validation_alias="OPENAI_API_KEY")
    openai_base_url: str | None = Field(default=None, validation_alias="OPENAI_BASE_URL")
    redis_url: str | None = Field(default=None, validation_alias="REDIS_URL")
    slack_bot_token: SecretStr | None = Field(default=None, validation_alias="SLACK_BOT_TOKEN")
    slack_app_token: SecretStr | None = Field(default=None, validation_alias="SLACK_APP_TOKEN")
    slack_signing_secret: SecretStr | None = Field(default=None, validation_alias="SLACK_SIGNING_SECRET")
    slack_api_url: str | None = Field(default=None, validation_alias="SLACK_API_URL")
    alertmanager_token: SecretStr | None = Field(default=None, validation_alias="ALERTMANAGER_TOKEN")
    alertmanager_user: str | None = Field(default=None, validation_alias="ALERTMANAGER_USER")
    alertmanager_password: SecretStr | None = Field(default=None, validation_alias="ALERTMANAGER_PASSWORD")
    pagerduty_webhook_secrets: SecretStr | None = Field(
        default=None,
        validation_alias="PAGERDUTY_WEBHOOK_SECRETS",
        description="comma-separated, several during rotation",
    )
    model: str = "gpt-4o-mini"
    config: Path | None = None
    metrics_port: int = Field(
        default=9464,
        ge=0,
        le=65535,
        description="OPSBOT_METRICS_PORT: /metrics in Socket Mode, on a port of its own (0: off); over HTTP "
        "/metrics is served beside /slack/events",
    )
    llm: ModelSettings = Field(default_factory=ModelSettings)
    loop: LoopLimits = Field(default_factory=LoopLimits)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    slack: SlackSettings = Field(default_factory=SlackSettings)
    alerts: AlertSettings = Field(default_factory=AlertSettings)
    runbooks: RunbookSettings = Field(default_factory=RunbookSettings)
    audit: AuditSettings = Field(default_factory=AuditSettings)
    http: HttpSettings = Field(default_factory=HttpSettings)
    mcp_serve: McpServeSettings = Field(default_factory=McpServeSettings)
    policy: Policy = Field(default_factory=Policy)

    @field_validator("redis_url")
    @classmethod
    def _redis_url(cls, url: str | None) -> str | None:
        if url is not None:
            parse_redis_url(url)  # a RedisUrlError (a ValueError) says what to write instead
        return url

    @field_validator("openai_base_url")
    @classmethod
    def _base_url(cls, url: str | None) -> str | None:
        if url is not None and urlsplit(url).scheme not in ("http", "https"):
            raise ValueError("OPENAI_BASE_URL must look like https://host/v1")
        return url

    @field_validator("slack_bot_token")
    @classmethod
    def _bot_token(cls, token: SecretStr | None) -> SecretStr | None:
        if token is not None and not token.get_secret_value().startswith("xoxb-"):
            raise ValueError("SLACK_BOT_TOKEN must be the bot token (xoxb-...) from the app's OAuth & Permissions page")
        return token

    @field_validator("slack_app_token")
    @classmethod
    def _app_token(cls, token: SecretStr | None) -> SecretStr | None:
        if token is not None and not token.get_secret_value().startswith("xapp-"):
            raise ValueError(
                "SLACK_APP_TOKEN must be an app-level token (xapp-...) with connections:write, "
                "from the app's Basic Information page"
            )
        return token

    @field_validator("slack_api_url")
    @classmethod
    def _slack_api_url(cls, url: str | None) -> str | None:
        if url is not None and urlsplit(url).scheme not in ("http", "https"):
            raise ValueError("SLACK_API_URL must look like https://slack.com/api/")
        return url if url is None or url.endswith("/") else url + "/"

    @property
    def model_configured(self) -> bool:
        """A model is usable with a key, or with a base URL alone (local servers need no key)."""
        return self.openai_api_key is not None or self.openai_base_url is not None

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # First wins: the environment overrides what the YAML file (passed as init values) says.
        return (env_settings, init_settings)

    @classmethod
    def load(cls, config_path: Path | None = None) -> Settings:
        """Settings from the environment and the YAML file at `config_path` or `$OPSBOT_CONFIG`.

        Raises `config.check.ConfigError` listing every problem of the file.
        """
        env_path = os.environ.get("OPSBOT_CONFIG")
        path = config_path or (Path(env_path) if env_path else None)
        if path is None:
            return cls()
        file_config = load_file_config(path)
        values: dict[str, Any] = file_config.model_dump(exclude_unset=True, exclude={"policy"})
        policy = file_config.policy.resolved(path.resolve().parent)
        if policy.runbooks_dir is not None:
            policy = policy.model_copy(
                update={"runbooks": {**policy.runbooks, **load_runbooks(policy.runbooks_dir, policy)}}
            )
        values["policy"] = policy
        values["config"] = path
        return cls(**values)


def environment_problems(exc: ValidationError) -> list[str]:
    """What the environment set that `Settings` refused, one line each, named as it is set
    (OPSBOT_LOOP__MAX_STEPS, REDIS_URL) and worded as the file's problems are."""
    return [_environment_line(_variable(problem.loc), problem.message) for problem in worded(Settings, exc.errors())]


def _environment_line(variable: str, message: str) -> str:
    # A message that names its variable itself (REDIS_URL's) is not given the name twice.
    return f"environment: {message}" if message.startswith(f"{variable} ") else f"environment: {variable}: {message}"


def _variable(loc: tuple[int | str, ...]) -> str:
    field = Settings.model_fields.get(str(loc[0])) if loc else None
    if field is None:  # an alias (REDIS_URL) is the variable's own name
        return ".".join(str(part) for part in loc) or "settings"
    prefix = Settings.model_config.get("env_prefix", "")
    delimiter = Settings.model_config.get("env_nested_delimiter") or "__"
    return prefix + delimiter.join(str(part).upper() for part in loc)
