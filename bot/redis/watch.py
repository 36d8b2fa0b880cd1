"""What Redis says about itself: which server answers (its run id changes when it restarts or
fails over) and whether it keeps its data over a restart."""

from __future__ import annotations

from typing import Any

import redis
from pydantic import BaseModel, ConfigDict
from redis.cluster import RedisCluster

from .client import RedisClient


class Persistence(BaseModel):
    """Whether Redis writes its data down: an append-only file, snapshots, or (managed Redis that
    refuses CONFIG) unknown."""

    model_config = ConfigDict(frozen=True)

    known: bool
    aof: bool = False
    snapshots: bool = False

    @property
    def keeps_data(self) -> bool:
        return self.aof or self.snapshots

    def describe(self) -> str:
        if not self.known:
            return "unknown (this Redis refuses CONFIG GET)"
        if self.aof:
            return "append-only file"
        if self.snapshots:
            return "snapshots only: a restart loses the writes since the last one"
        return "none: a restart loses everything"


def server_ids(client: RedisClient) -> frozenset[str]:
    """The run ids of the servers holding opsbot's data: a new one means a restart or a failover."""
    if isinstance(client, RedisCluster):
        replies: dict[str, Any] = client.info("server", target_nodes=RedisCluster.PRIMARIES)
        return frozenset(str(reply["run_id"]) for reply in replies.values())
    return frozenset({str(client.info("server")["run_id"])})


def persistence(client: RedisClient) -> Persistence:
    """What survives a restart of (every primary of) this Redis."""
    try:
        if isinstance(client, RedisCluster):
            nodes: Any = client.config_get("appendonly", "save", target_nodes=RedisCluster.PRIMARIES)
            configs: list[dict[Any, Any]] = list(nodes.values())
        else:
            configs = [dict(client.config_get("appendonly", "save"))]
    except redis.ResponseError:
        return Persistence(known=False)
    return Persistence(
        known=True,
        aof=all(config.get("appendonly") == "yes" for config in configs),
        snapshots=all(bool((config.get("save") or "").strip()) for config in configs),
    )
