"""Throwaway Redis on free ports in a test's directory: one `redis-server` a test can stop and
start again, a Sentinel setup (a master, a replica, one or three sentinels), a 3-master Cluster.

Every process runs in a session of its own and is stopped by killing its process group: a
master forks a child to send a replica its snapshot, and that child must go too. The setups
start in a second or two and stop whatever they started even when starting failed halfway.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import redis

from tests.fakes.waiting import until

SENTINEL_SERVICE = "opsbot"
# A key outside opsbot's prefixes, written and deleted to see replication flow.
_PROBE = "tests:replication-probe"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _binary(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(f"{name} is not on PATH: install the Debian package redis-server")
    return found


def _wait_for(what: str, check: Callable[[], bool], timeout_s: float = 10.0) -> None:
    if not until(check, timeout_s, interval=0.02, ignore=(redis.RedisError,)):
        raise TimeoutError(f"{what}: not within {timeout_s:.0f} s")


class RedisServer:
    """One `redis-server` (or, with `sentinel=True`, a sentinel) on a free port, no persistence."""

    def __init__(self, workdir: Path, args: Sequence[str] = (), sentinel: bool = False) -> None:
        self.binary = _binary("redis-server")
        self.workdir = workdir
        self.port = free_port()
        self.args = list(args)
        self.sentinel = sentinel
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_connect_timeout=1, socket_timeout=5, decode_responses=True)

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        common = ["--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.workdir)]
        if self.sentinel:
            # A sentinel rewrites its configuration file: it needs one of its own.
            conf = self.workdir / "sentinel.conf"
            if not conf.exists():
                conf.write_text("\n".join(self.args) + "\n")
            argv = [self.binary, str(conf), "--sentinel", *common]
        else:
            # hz 100: a blocking command's timeout (the alert worker's wait) ends within 10 ms, not 100.
            argv = [self.binary, *common, "--save", "", "--appendonly", "no", "--hz", "100", *self.args]
        self.process = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        client = redis.Redis(port=self.port, socket_connect_timeout=0.2)
        try:
            _wait_for(f"redis-server on port {self.port}", lambda: bool(client.ping()))
        finally:
            client.close()

    def stop(self) -> None:
        if self.process is not None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass  # already gone
            self.process.wait()
            self.process = None

    def flush(self) -> None:
        client = redis.Redis(port=self.port)
        client.flushall()
        client.close()


class SentinelSetup:
    """A master, `replicas` replicas of it, and `sentinels` sentinels watching them as `opsbot`.

    Down after 500 ms without an answer, so a killed master is replaced in about two seconds.
    `server_args` go to the master and the replicas (a replica may become master)."""

    def __init__(self, workdir: Path, sentinels: int = 1, replicas: int = 1, server_args: Sequence[str] = ()) -> None:
        # Without the delay a master waits 5 s for more replicas before it sends the first its snapshot.
        args = ["--repl-diskless-sync-delay", "0", *server_args]
        self.master = RedisServer(workdir / "master", args)
        self.replicas = [
            RedisServer(workdir / f"replica{n}", [*args, "--replicaof", "127.0.0.1", str(self.master.port)])
            for n in range(replicas)
        ]
        monitor = [
            f"sentinel monitor {SENTINEL_SERVICE} 127.0.0.1 {self.master.port} {sentinels // 2 + 1}",
            f"sentinel down-after-milliseconds {SENTINEL_SERVICE} 500",
            f"sentinel failover-timeout {SENTINEL_SERVICE} 5000",
        ]
        self.sentinels = [RedisServer(workdir / f"sentinel{n}", monitor, sentinel=True) for n in range(sentinels)]

    @property
    def url(self) -> str:
        return f"redis+sentinel://{','.join(s.address for s in self.sentinels)}/{SENTINEL_SERVICE}/0"

    @property
    def servers(self) -> list[RedisServer]:
        return [self.master, *self.replicas]

    def start(self) -> None:
        started: list[RedisServer] = []
        try:
            for server in self.servers:
                server.start()
                started.append(server)
            for replica in self.replicas:
                _wait_for("the replica in sync", lambda r=replica: _ask(r, _in_sync))
            for sentinel in self.sentinels:
                sentinel.start()
                started.append(sentinel)
            for sentinel in self.sentinels:
                _wait_for("each sentinel seeing the replicas in sync", lambda s=sentinel: self._sees_replicas(s))
                # Peers find each other through hello messages, every two seconds.
                _wait_for("the sentinels knowing each other", lambda s=sentinel: self._knows_peers(s))
            _wait_for("the master streaming to every replica", lambda: _streams_to(self.master, len(self.replicas)))
        except BaseException:
            for server in started:
                server.stop()
            raise

    def stop(self) -> None:
        for server in (*self.sentinels, *self.servers):
            server.stop()

    def current_master(self) -> RedisServer:
        """The server the first sentinel names master."""
        port = _ask(self.sentinels[0], _master_port)
        return next(server for server in self.servers if server.port == port)

    def flush(self) -> None:
        self.current_master().flush()

    def failover(self) -> None:
        """`SENTINEL FAILOVER`: a replica is promoted while the master still runs."""
        _ask(self.sentinels[0], lambda c: c.execute_command("SENTINEL", "FAILOVER", SENTINEL_SERVICE))

    def wait_for_new_master(self, old: RedisServer, timeout_s: float = 15.0) -> RedisServer:
        """The server every sentinel names master once the failover is over, and that says so itself,
        with every other live replica replicating from it and acknowledging its writes (until then,
        with min-replicas-to-write, it refuses them)."""

        def promoted() -> bool:
            named = {_ask(s, _master_port) for s in self.sentinels}
            if len(named) != 1 or old.port in named:
                return False
            new = next(server for server in self.servers if server.port in named)
            live = [r for r in self.servers if r not in (old, new) and r.process is not None]
            return (
                _ask(new, lambda c: c.info("replication")["role"] == "master")
                and all(
                    _ask(r, lambda c: c.info("replication").get("master_port") == new.port and _in_sync(c))
                    for r in live
                )
                and _streams_to(new, len(live))
            )

        _wait_for("a new master", promoted, timeout_s)
        return self.current_master()

    def _sees_replicas(self, sentinel: RedisServer) -> bool:
        # Connected to each and told by it that it replicates: before that, no failover can pick one.
        seen = _ask(sentinel, lambda c: c.sentinel_slaves(SENTINEL_SERVICE))
        linked = [r for r in seen if not r["is_disconnected"] and r["master-link-status"] == "ok"]
        return len(linked) == len(self.replicas)

    def _knows_peers(self, sentinel: RedisServer) -> bool:
        return len(_ask(sentinel, lambda c: c.sentinel_sentinels(SENTINEL_SERVICE))) == len(self.sentinels) - 1


def _ask(server: RedisServer, question: Callable[[redis.Redis], Any]) -> Any:
    client = server.client()
    try:
        return question(client)
    finally:
        client.close()


def _master_port(sentinel: redis.Redis) -> int:
    # As clients read it (SENTINEL MASTERS): GET-MASTER-ADDR-BY-NAME names the promoted replica
    # already while the failover still reconfigures the other replicas.
    return int(sentinel.sentinel_master(SENTINEL_SERVICE)["port"])


def _streams_to(master: RedisServer, replicas: int) -> bool:
    """Whether `replicas` replicas acknowledge the master's writes. A replica says its link is up
    before the master streams to it: after a diskless sync the stream starts with the replica's
    first acknowledgement, up to a second later, and a replica promoted before that lacks every
    write since. A write they all acknowledge proves the stream flows."""

    def probe(client: redis.Redis) -> bool:
        client.set(_PROBE, "1")
        client.delete(_PROBE)
        return int(client.execute_command("WAIT", replicas, 100)) >= replicas

    return replicas == 0 or bool(_ask(master, probe))


def _in_sync(client: redis.Redis) -> bool:
    return client.info("replication").get("master_link_status") == "up"


class ClusterSetup:
    """Three masters with `--cluster-enabled yes`, joined by `redis-cli --cluster create`."""

    def __init__(self, workdir: Path, masters: int = 3) -> None:
        self.nodes = [
            RedisServer(
                workdir / f"node{n}",
                # The bus port is named rather than left at port + 10000, which may be taken (or > 65535).
                [
                    *("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"),
                    *("--cluster-node-timeout", "2000", "--cluster-port", str(free_port())),
                ],
            )
            for n in range(masters)
        ]

    @property
    def url(self) -> str:
        return "redis+cluster://" + ",".join(node.address for node in self.nodes)

    def start(self) -> None:
        started: list[RedisServer] = []
        try:
            for node in self.nodes:
                node.start()
                started.append(node)
            subprocess.run(
                [
                    _binary("redis-cli"),
                    "--cluster",
                    "create",
                    *(node.address for node in self.nodes),
                    "--cluster-replicas",
                    "0",
                    "--cluster-yes",
                ],
                check=True,
                capture_output=True,
                timeout=30,
            )
            for node in self.nodes:
                _wait_for("the cluster state ok", lambda n=node: self._ok(n))
        except BaseException:
            for node in started:
                node.stop()
            raise

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def flush(self) -> None:
        for node in self.nodes:
            node.flush()

    def _ok(self, node: RedisServer) -> bool:
        info = _ask(node, lambda c: c.cluster("info"))
        return bool(info["cluster_state"] == "ok" and int(info["cluster_known_nodes"]) == len(self.nodes))
