"""The arguments of query_alerts and create_silence, as the model writes them."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

MATCHERS = (
    "label matchers, all of which must hold: name=value, name!=value, name=~regex, name!~regex "
    "(e.g. alertname=HighErrorRate, service=checkout)"
)


class QueryAlertsArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str = Field(description="Alertmanager name, as listed in this tool's description")
    matchers: list[str] = Field(default_factory=list, max_length=20, description=MATCHERS + "; none: every alert")
    silenced: bool = Field(default=True, description="include firing alerts a silence mutes")
    inhibited: bool = Field(default=True, description="include firing alerts another alert inhibits")
    list_silences: bool = Field(
        default=True, description="also list the silences (active or pending) whose matchers these matchers match"
    )


class CreateSilenceArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str = Field(description="Alertmanager name, as listed in this tool's description")
    matchers: list[str] = Field(min_length=1, max_length=20, description=MATCHERS + "; at least one must be name=value")
    duration: str = Field(max_length=20, description="how long the silence lasts from now: 30m, 2h, 1d")
    comment: str = Field(min_length=1, max_length=500, description="why, as the people paged will read it")
