"""The arguments of query_metrics and find_metrics, as the model writes them."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class QueryMetricsArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str = Field(description="metrics source name, as listed in this tool's description")
    query: str = Field(min_length=1, max_length=2000, description="a PromQL expression")
    since: str | None = Field(
        default=None,
        max_length=40,
        description="start of a range query: 15m, 2h, 1d or ISO-8601 (UTC without an offset); absent: an instant query",
    )
    until: str | None = Field(
        default=None, max_length=40, description="end of the range, or the instant's time; default: now"
    )
    step: str | None = Field(
        default=None,
        max_length=20,
        description="resolution of a range query: 15s, 1m, 5m; default: the range divided into the source's max points",
    )


class FindMetricsArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str = Field(description="metrics source name, as listed in this tool's description")
    words: str = Field(
        min_length=1, max_length=200, description="words of the metric's name, such as 'http requests' or 'cpu'"
    )
    limit: int = Field(default=10, ge=1, le=30, description="most metric names shown")
