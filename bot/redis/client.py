"""The one way opsbot connects to Redis: a client for REDIS_URL (config/redis_url.py has the forms).

One server, a master found through Sentinel, or a Cluster: the same decoding, timeouts and retries
for all. A command whose connection fails is retried three times, 0.1 to 0.8 s apart, then fails
(1.4 s of waiting at most), so a caller answers "Redis is unavailable" quickly and tries again on its
next call; the next call asks Sentinel again, or refreshes the Cluster's slot map. A command that
timed out is not retried: the server may have done it, and doing a write twice is worse than
reporting it failed.
"""

from __future__ import annotations

from typing import Any

import redis
from redis.backoff import EqualJitterBackoff, NoBackoff
from redis.cluster import ClusterNode, RedisCluster
from redis.exceptions import AuthenticationError, AuthorizationError, NoPermissionError, RedisClusterException
from redis.retry import Retry
from redis.sentinel import Sentinel, SentinelConnectionPool, SentinelManagedConnection

from ...config.redis_url import RedisTarget, parse_redis_url
from ..faults import nobody_there

RedisClient = redis.Redis | RedisCluster
# A cluster client's own errors (no node reachable, slots not covered) are not RedisErrors.
REDIS_ERRORS: tuple[type[Exception], ...] = (redis.RedisError, RedisClusterException)

_TIMEOUTS: dict[str, Any] = {"socket_connect_timeout": 2, "socket_timeout": 5}
# A PING before using a connection idle this long: a connection a firewall dropped fails there.
_HEALTH_CHECK_S = 30


def retry_policy() -> Retry:
    return Retry(EqualJitterBackoff(cap=1.0, base=0.1), retries=3, supported_errors=(redis.ConnectionError,))


def lasting(exc: BaseException, answered_before: bool) -> bool:
    """Whether a Redis failure is one no retry cures: credentials refused, or, for a client that
    never reached its Redis, an address where nothing listens or a host that does not resolve
    (REDIS_URL is wrong). Once Redis has answered, a refused connection is a restart or a
    failover under way, worth trying again."""
    if isinstance(exc, AuthenticationError | AuthorizationError | NoPermissionError):
        return True
    return not answered_before and nobody_there(exc) is not None


def connect(url: str) -> RedisClient:
    """A client for `url` (REDIS_URL). A Cluster client reads the slot map from a node here and
    raises one of REDIS_ERRORS when no listed node answers; the others connect on first use."""
    target = parse_redis_url(url)
    common: dict[str, Any] = {**_TIMEOUTS, "health_check_interval": _HEALTH_CHECK_S, "decode_responses": True}
    if target.kind == "sentinel":
        return _sentinel_master(target, common)
    if target.kind == "cluster":
        return RedisCluster(
            startup_nodes=[ClusterNode(host, port) for host, port in target.nodes],
            username=target.username,
            password=target.password,
            retry=retry_policy(),
            **common,
        )
    return redis.Redis.from_url(url, retry=retry_policy(), **common)


def describe(url: str) -> str:
    """REDIS_URL for messages: what it names, without its password."""
    target = parse_redis_url(url)
    kind = {"server": "Redis", "sentinel": "Redis (through Sentinel)", "cluster": "Redis Cluster"}[target.kind]
    return f"{kind} at {target.describe()}"


def describe_client(client: RedisClient) -> str:
    """What `client` talks to, for messages: a client passed in carries no URL."""
    if isinstance(client, RedisCluster):
        return "Redis Cluster at " + ",".join(node.name for node in client.nodes_manager.startup_nodes.values())
    pool = client.connection_pool
    if isinstance(pool, SentinelConnectionPool):
        return f"Redis (through Sentinel) master {pool.service_name}"
    kwargs = pool.connection_kwargs
    if "path" in kwargs:
        return f"Redis at {kwargs['path']}"
    return f"Redis at {kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}/{kwargs.get('db', 0)}"


def _sentinel_master(target: RedisTarget, common: dict[str, Any]) -> redis.Redis:
    # Each sentinel is asked once per lookup: the next one in the list is the retry.
    sentinels = Sentinel(list(target.nodes), sentinel_kwargs={**_TIMEOUTS, "retry": Retry(NoBackoff(), 0)})
    master: redis.Redis = sentinels.master_for(
        target.service,
        connection_class=_MasterConnection,
        db=target.db,
        username=target.username,
        password=target.password,
        retry=retry_policy(),
        **common,
    )
    return master


class _MasterConnection(SentinelManagedConnection):
    """A connection to the server Sentinel names master at the time it connects.

    Two cases where redis-py would keep talking to a master Sentinel has replaced:
    - redis-py 6 to 8 reconnect within a command's retries without asking Sentinel, so after a
      failover they dial the old address until the retries run out
      (https://github.com/redis/redis-py/issues/3874);
    - a replaced master that still runs (a `SENTINEL FAILOVER`, a partition) takes writes until
      Sentinel demotes it, some ten seconds later, and the new master never sees them. With
      `min-replicas-to-write 1` (docs/operations.md: Redis) it refuses them with NOREPLICAS as soon as its
      replica has left; refused, nothing was written, so the command is safe to retry on the
      master Sentinel names now, as redis-py already does after READONLY.
    """

    # (The methods called on self are redis-py's, unannotated.)
    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        if not self._sock:
            self.connect_to(self.connection_pool.get_master_address())  # type: ignore[no-untyped-call]
        super().send_packed_command(command, check_health)  # type: ignore[no-untyped-call]

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().read_response(*args, **kwargs)
        except redis.ResponseError as exc:
            if not str(exc).startswith("NOREPLICAS"):
                raise
            self.disconnect()  # type: ignore[no-untyped-call]
            raise redis.ConnectionError(f"{exc} (a master Sentinel replaced?)") from exc
