"""Redis beyond one server: a 3-master Cluster and a Sentinel-watched master, real servers all.

On a Cluster every key one MULTI/EXEC or script touches must be in one hash slot: the run store
and the alert queue do their whole work here (thread memory does in tests/test_memory.py). Through
Sentinel a client must follow the master when it changes: a killed master, and a master replaced
while it still runs (`SENTINEL FAILOVER`), whose writes would be lost.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from redis.cluster import RedisCluster

from opsbot.bot.alerts import Alert, AlertQueue
from opsbot.bot.memory import MemoryUnavailable
from opsbot.bot.memory.redis import RedisMemory
from opsbot.bot.messages import Block, Message
from opsbot.bot.redis.client import REDIS_ERRORS, connect
from opsbot.bot.runbooks import RedisRunStore
from tests.fakes.redis_server import ClusterSetup, RedisServer, SentinelSetup, free_port
from tests.fakes.runs import run_record
from tests.fakes.waiting import until


def user(text: str) -> Block:
    return Block(messages=[Message.user(text)])


def stored(server: RedisServer, key: str) -> list[str]:
    client = server.client()
    try:
        return [Block.model_validate_json(raw).messages[0].content or "" for raw in client.lrange(key, 0, -1)]
    finally:
        client.close()


BLOCKS = "opsbot:thread:{t}:blocks"


# ---------------------------------------------------------------- Cluster


def cluster_client(cluster: ClusterSetup) -> RedisCluster:
    cluster.flush()
    client = connect(cluster.url)
    assert isinstance(client, RedisCluster)
    return client


def test_a_threads_keys_share_one_slot_and_threads_spread_over_the_masters(redis_cluster: ClusterSetup) -> None:
    client = cluster_client(redis_cluster)
    memory = RedisMemory(redis_cluster.url, client=client)
    for thread in ("slack:T1:C1:1700000000.000100", "a}b", "", "{x}"):
        keys = [*memory._keys(thread).values(), memory._lock_key(thread)]
        assert len({client.keyslot(key) for key in keys}) == 1, keys
    nodes = {client.get_node_from_key(memory._keys(f"slack:T1:C1:{n}")["blocks"]).name for n in range(30)}
    assert len(nodes) == 3, "threads are not all in one slot"
    with pytest.raises(REDIS_ERRORS):  # what the tags avoid: the cluster client refuses it
        with client.pipeline(transaction=True) as pipe:
            pipe.set("opsbot:thread:a:x", 1)
            pipe.set("opsbot:thread:b:x", 1)
            pipe.execute()


def test_the_runbook_run_store_works_on_a_cluster(redis_cluster: ClusterSetup) -> None:
    store = RedisRunStore(cluster_client(redis_cluster))
    assert store.create(run_record("r1")) and store.create(run_record("r2"))
    assert not store.create(run_record("r1")), "an existing id is refused"
    assert store.save(run_record("r1", "succeeded", version=1))
    assert not store.save(run_record("r1", "succeeded", version=1)), "a stale version is refused"
    assert store.unfinished() == ["r2"]
    assert store.lease("r2", "me", 10) and not store.lease("r2", "you", 10)
    assert store.renew("r2", "me", 10) and not store.renew("r2", "you", 10)
    store.release("r2", "me")
    assert store.lease("r2", "you", 10)
    loaded = store.load("r1")
    assert loaded is not None and loaded.status == "succeeded"
    assert "Redis Cluster at 127.0.0.1:" in store.describe()


def alert(n: int) -> Alert:
    return Alert(
        source="alertmanager",
        status="firing",
        key=f"k{n}",
        delivery=f"d{n}",
        labels={"n": str(n)},
        annotations={},
        title=f"alert {n}",
    )


def test_the_alert_queue_works_on_a_cluster(redis_cluster: ClusterSetup) -> None:
    client = cluster_client(redis_cluster)
    one, two = AlertQueue(client, owner="one"), AlertQueue(client, owner="two")
    assert one.take(["id1", "fp1"], alert(1)) and one.take(["id2"], alert(2))
    assert not two.take(["id3", "fp1"], alert(3)), "seen under one of its ids"
    first = one.next(wait_s=1)
    assert first is not None and Alert.model_validate_json(first).key == "k1"
    one.give_back(first)
    second = one.next(wait_s=1)
    assert second is not None and Alert.model_validate_json(second).key == "k2"
    one.done(second)
    third = one.next(wait_s=1)  # alert 1 again, now one's; one stops without saying it is alive
    assert third == first
    assert two.requeue_orphans() == 1
    assert two.next(wait_s=1) == first


def test_a_cluster_nobody_answers_is_memory_unavailable_not_a_crash() -> None:
    url = f"redis+cluster://127.0.0.1:{free_port()},127.0.0.1:{free_port()}"
    memory = RedisMemory(url)  # connects on first use
    started = time.monotonic()
    with pytest.raises(MemoryUnavailable, match="Redis Cluster at redis\\+cluster://127.0.0.1"):
        memory.load("t", new_turn=True)
    assert time.monotonic() - started < 5


# ---------------------------------------------------------------- Sentinel


def test_a_killed_master_is_replaced_and_the_same_client_writes_on_losing_nothing(tmp_path: Path) -> None:
    """Three sentinels elect who fails the master over; a writer keeps appending meanwhile. Each
    append either returns (and is stored once) or fails with MemoryUnavailable within the client's
    retries (and is not stored), and appends succeed again on the new master within seconds."""
    setup = SentinelSetup(tmp_path, sentinels=3)
    setup.start()
    try:
        memory = RedisMemory(setup.url)
        written: list[int] = []
        refused: list[tuple[int, float]] = []
        stop = threading.Event()

        def write() -> None:
            n = 0
            while not stop.is_set():
                n += 1
                started = time.monotonic()
                try:
                    memory.append("t", [user(str(n))])
                    written.append(n)
                except MemoryUnavailable:
                    refused.append((n, time.monotonic() - started))
                stop.wait(0.01)  # a writer's pace: a hundred appends a second at most

        writer = threading.Thread(target=write)
        writer.start()
        try:
            assert until(lambda: len(written) >= 20, 10), f"the writer is not writing; refused {refused}"
            old = setup.current_master()
            old.stop()
            killed_at, before = time.monotonic(), len(written)
            new = setup.wait_for_new_master(old)
            left = 15 - (time.monotonic() - killed_at)
            assert until(lambda: written[before + 20 :], left, interval=0.05), (
                f"no write reached the new master; refused {refused}"
            )
        finally:
            stop.set()
            writer.join()
        assert all(took < 3 for _, took in refused), f"a refused append took long: {refused}"
        assert stored(new, BLOCKS) == [str(n) for n in written], "an acknowledged append lost or doubled"
        assert [b.messages[0].content for b in memory.load("t", new_turn=False).blocks] == [str(n) for n in written]
    finally:
        setup.stop()


def test_after_a_manual_failover_the_next_write_goes_to_the_new_master(tmp_path: Path) -> None:
    """`SENTINEL FAILOVER` leaves the old master running as a master for some ten seconds; what a
    client writes there is lost once it is demoted. With min-replicas-to-write it refuses writes
    (its replicas have left) and the client asks Sentinel again, at once: the same client object
    writes to the new master, and nothing to the old one."""
    setup = SentinelSetup(tmp_path, sentinels=1, replicas=2, server_args=["--min-replicas-to-write", "1"])
    setup.start()
    try:
        memory = RedisMemory(setup.url)
        memory.append("t", [user("before")])
        old = setup.current_master()
        setup.failover()
        new = setup.wait_for_new_master(old)
        assert old.client().info("replication")["role"] == "master", "the old master still runs as one"
        started = time.monotonic()
        memory.append("t", [user("after")])
        assert time.monotonic() - started < 2
        assert stored(new, BLOCKS) == ["before", "after"]
        assert stored(old, BLOCKS) == ["before"]
    finally:
        setup.stop()


def test_sentinels_nobody_answers_are_memory_unavailable_within_the_retries() -> None:
    memory = RedisMemory(f"redis+sentinel://127.0.0.1:{free_port()},127.0.0.1:{free_port()}/opsbot/0")
    started = time.monotonic()
    with pytest.raises(MemoryUnavailable, match=r"No master found for 'opsbot'"):
        memory.load("t", new_turn=True)
    assert time.monotonic() - started < 3
