"""REDIS_URL, read and checked before anything connects.

    redis://[[user]:password@]host[:port][/db]          one server (rediss:// with TLS)
    unix://[[user]:password@]/path/to/redis.sock[?db=N]  one server on a socket
    redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/service[/db]
    redis+cluster://[[user]:password@]host[:port][,host[:port]...]

A Sentinel URL lists sentinels (port 26379 unless given) and names the master they watch; its
password is the master's. A Cluster URL lists a few of the cluster's nodes (port 6379 unless
given), from which the client learns the rest; a cluster has database 0 only. redis-py reads the
first three forms itself (`Redis.from_url`); the other two are the `redis+sentinel://` form other
Python projects use too (redis-sentinel-url, LangChain, Prefect) and its Cluster counterpart.

Every problem is a `RedisUrlError` naming REDIS_URL and what to write instead: redis-py alone
would take `redis://cache/zero` as database 0 and `redis://:6379` as localhost.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from typing import Literal, NamedTuple
from urllib.parse import SplitResult, unquote, urlsplit

SERVER_SCHEMES = ("redis", "rediss", "unix")
SENTINEL_SCHEME = "redis+sentinel"
CLUSTER_SCHEME = "redis+cluster"
SENTINEL_PORT = 26379
REDIS_PORT = 6379

_FORMS = (
    "redis://host:6379/0 (or rediss://, unix:///path/redis.sock, "
    "redis+sentinel://host:26379,host:26379/service/0, redis+cluster://host:6379,host:6379)"
)
_EXAMPLE = {
    "redis": "redis://cache.internal:6379/0",
    "rediss": "rediss://cache.internal:6380/0",
    "unix": "unix:///run/redis/redis.sock?db=0",
    SENTINEL_SCHEME: "redis+sentinel://s1:26379,s2:26379,s3:26379/mymaster/0",
    CLUSTER_SCHEME: "redis+cluster://node1:6379,node2:6379,node3:6379",
}


class RedisUrlError(ValueError):
    """REDIS_URL cannot be used; the message says what to write instead."""


class Node(NamedTuple):
    """A sentinel, or a cluster node to start from."""

    host: str
    port: int


class Credentials(NamedTuple):
    username: str | None
    password: str | None


@dataclass(frozen=True)
class RedisTarget:
    """What REDIS_URL names. `nodes` are the sentinels, or the cluster nodes to start from."""

    kind: Literal["server", "sentinel", "cluster"]
    url: str
    _: KW_ONLY
    nodes: tuple[Node, ...] = ()
    service: str = ""
    db: int = 0
    username: str | None = None
    password: str | None = None

    def describe(self) -> str:
        """The URL without its password, for messages and logs."""
        parts = urlsplit(self.url)
        userinfo, at, hosts = parts.netloc.rpartition("@")
        if not at or ":" not in userinfo:
            return self.url
        return parts._replace(netloc=f"{userinfo.split(':', 1)[0]}:***@{hosts}").geturl()


def parse_redis_url(url: str) -> RedisTarget:
    scheme = url.split("://", 1)[0] if "://" in url else ""  # redis-py reads lower case only
    if scheme in SERVER_SCHEMES:
        return _server(url, scheme)
    if scheme in (SENTINEL_SCHEME, CLUSTER_SCHEME):
        return _multi(url, scheme)
    raise RedisUrlError(f"REDIS_URL must look like {_FORMS}")


def _fail(scheme: str, problem: str, fix: str) -> RedisUrlError:
    return RedisUrlError(f"REDIS_URL {problem}; {fix}, e.g. REDIS_URL={_EXAMPLE[scheme]}")


def _server(url: str, scheme: str) -> RedisTarget:
    parts = urlsplit(url)
    if scheme == "unix":
        if not parts.path.strip("/"):
            raise _fail(scheme, "names no socket", "write the socket's path after unix://")
    else:
        if not parts.hostname:
            raise _fail(scheme, "names no host", "write the server's host name after //")
        _port(parts, scheme)
        db = unquote(parts.path).strip("/")
        if db and not db.isdigit():
            raise _fail(scheme, f"ends in {parts.path!r}, which is not a database number", "end it with the number")
    # Imported here, when a URL is checked: redis-py takes a tenth of a second to import, which
    # every command that needs no Redis (check-config, direct commands, the terminal) would pay.
    from redis import ConnectionPool

    try:
        # A connection object as redis-py makes it from the URL (no socket yet): an option after `?`
        # it does not know, or cannot read, fails here rather than at the first command.
        pool = ConnectionPool.from_url(url)
        pool.make_connection()
    except (TypeError, ValueError) as exc:
        raise _fail(scheme, f"has an option redis-py refuses ({exc})", "fix or remove it") from exc
    return RedisTarget("server", url, db=int(pool.connection_kwargs.get("db", 0)))


def _port(parts: SplitResult, scheme: str) -> None:
    try:
        port = parts.port  # None when none is written
    except ValueError:  # not a number, or above 65535
        port = 0
    if port == 0:
        raise _fail(scheme, f"has port {parts.netloc.rpartition(':')[2]!r}", "write a port from 1 to 65535")


def _multi(url: str, scheme: str) -> RedisTarget:
    rest = url.split("://", 1)[1]
    if "?" in rest or "#" in rest:
        raise _fail(scheme, f"has options after ? or #, which a {scheme}:// URL does not take", "remove them")
    netloc, _, path = rest.partition("/")
    userinfo, at, hosts = netloc.rpartition("@")
    username, password = _credentials(userinfo) if at else Credentials(None, None)
    default = SENTINEL_PORT if scheme == SENTINEL_SCHEME else REDIS_PORT
    nodes = tuple(_node(scheme, item, default) for item in hosts.split(","))
    segments = [unquote(s) for s in path.rstrip("/").split("/")] if path.rstrip("/") else []
    if scheme == CLUSTER_SCHEME:
        if any(s not in ("", "0") for s in segments):
            raise _fail(scheme, f"ends in /{path}, but a Redis Cluster has database 0 only", "end it after the hosts")
        return RedisTarget("cluster", url, nodes=nodes, username=username, password=password)
    if not segments:
        raise _fail(
            scheme, "names no Sentinel service", "write the master's name the sentinels monitor after the hosts"
        )
    if len(segments) > 2 or (len(segments) == 2 and not segments[1].isdigit()):
        raise _fail(scheme, f"ends in /{path}, which is not /service or /service/db", "end it with /service/0")
    db = int(segments[1]) if len(segments) == 2 else 0
    return RedisTarget("sentinel", url, nodes=nodes, service=segments[0], db=db, username=username, password=password)


def _credentials(userinfo: str) -> Credentials:
    user, _, password = userinfo.partition(":")  # as redis-py reads `user:password@` and `:password@`
    return Credentials(unquote(user) or None, unquote(password) or None)


def _node(scheme: str, item: str, default: int) -> Node:
    host, port = item, ""
    if item.startswith("["):  # [::1]:26379
        host, _, after = item[1:].partition("]")
        port = after.removeprefix(":")
    elif ":" in item:
        host, _, port = item.rpartition(":")
    if not host:
        raise _fail(scheme, "names an empty host", "list hosts as host:port, separated by commas")
    if not port:
        return Node(host, default)
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise _fail(scheme, f"has port {port!r} for {host}", "write a port from 1 to 65535")
    return Node(host, int(port))
