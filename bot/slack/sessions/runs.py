"""Which run works in which thread, across every process serving the workspace, and the stop
marks people set on them (Stop in Slack, opsbot's own Stop button, `stop` in the thread).

A stop may reach any process (Slack delivers an event or a click to one of them), once or twice.
So it is a mark in Redis, set once per run by one script: the first request wins and is the one
acted on; a second (a retry, a second click) finds the mark and changes nothing; a request for a
thread with no run working finds none and says so. The process running the run watches its
runs' entries (watch.py) and gives the run up when its mark appears.

One hash per channel (its key hash-tagged, so one script sees it whole on Redis Cluster): a
field per thread with a run working, `{run, user, until, stopped_by}`. `until` is the run's
lease on the injected clock, renewed while the run works; an entry past it belongs to a process
that died, and counts as ended. Entries go when their run ends, a dead process's ones when a run
begins in the channel; the hash expires with its last lease. The same tag holds each thread's
pending approval requests (their ids, until they expire) and the deliveries of stops seen.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from enum import StrEnum
from typing import NamedTuple

from ...redis.client import RedisClient
from ..jobs import ThreadRef

LEASE_S = 30.0  # a run's entry lasts this long past its last renewal (a second or less apart)
SEEN_TTL_S = 3600  # a stop's delivery id is remembered this long: Slack retries within minutes

# KEYS[1] the channel's runs. ARGV: thread_ts, run, user, now, until, ttl s.
_BEGIN = """
local entries = redis.call('hgetall', KEYS[1])
for i = 1, #entries, 2 do
  local ok, entry = pcall(cjson.decode, entries[i + 1])
  if not ok or tonumber(entry['until']) < tonumber(ARGV[4]) then redis.call('hdel', KEYS[1], entries[i]) end
end
redis.call('hset', KEYS[1], ARGV[1], cjson.encode({run = ARGV[2], user = ARGV[3], ['until'] = tonumber(ARGV[5])}))
redis.call('expire', KEYS[1], ARGV[6])
return 1
"""
# Renew a run's lease; who stopped it, if someone did. An entry Redis lost (a restart without
# persistence) is made again. KEYS[1] the channel's runs. ARGV: thread_ts, run, until, ttl s, user.
_RENEW = """
local raw = redis.call('hget', KEYS[1], ARGV[1])
local entry = {run = ARGV[2], user = ARGV[5]}
if raw then entry = cjson.decode(raw) end
if entry['run'] ~= ARGV[2] then return false end
entry['until'] = tonumber(ARGV[3])
redis.call('hset', KEYS[1], ARGV[1], cjson.encode(entry))
if redis.call('ttl', KEYS[1]) < tonumber(ARGV[4]) then redis.call('expire', KEYS[1], ARGV[4]) end
return entry['stopped_by'] or ''
"""
_END = """
local raw = redis.call('hget', KEYS[1], ARGV[1])
if raw and cjson.decode(raw)['run'] == ARGV[2] then redis.call('hdel', KEYS[1], ARGV[1]) end
return 1
"""
# A stop. KEYS[1] the channel's runs, KEYS[2] the delivery's seen mark.
# ARGV: thread_ts, user, now, seen ttl s. Returns {outcome, run, asker}: outcome 0 nothing works
# there, 1 this stop is the run's first, 2 it was stopped already, 3 this delivery was seen.
_STOP = """
if not redis.call('set', KEYS[2], '1', 'NX', 'EX', ARGV[4]) then return {3, '', ''} end
local raw = redis.call('hget', KEYS[1], ARGV[1])
if not raw then return {0, '', ''} end
local entry = cjson.decode(raw)
if tonumber(entry['until']) < tonumber(ARGV[3]) then return {0, '', ''} end
if entry['stopped_by'] then return {2, entry['run'], entry['user']} end
entry['stopped_by'] = ARGV[2]
redis.call('hset', KEYS[1], ARGV[1], cjson.encode(entry))
return {1, entry['run'], entry['user']}
"""


class Stop(StrEnum):
    """What a stop request found."""

    first = "first"  # a run worked there; this stop is the one that gives it up
    again = "again"  # the run was being stopped already (a second click, another person)
    ended = "ended"  # no run works in the thread (it ended, or its process died)
    seen = "seen"  # this very delivery was handled before (Slack delivered it again)


class StopRequest(NamedTuple):
    outcome: Stop
    run: str = ""  # the run stopped (first, again)
    asker: str = ""  # who asked the run's question


class RunEntry(NamedTuple):
    thread: ThreadRef
    run: str
    user: str


class RunBoard:
    def __init__(
        self, redis: RedisClient, prefix: str = "opsbot:slack", *, clock: Callable[[], float] = time.time
    ) -> None:
        self.redis = redis
        self.prefix = prefix
        self.clock = clock
        self._begin = redis.register_script(_BEGIN)
        self._renew = redis.register_script(_RENEW)
        self._end = redis.register_script(_END)
        self._stop = redis.register_script(_STOP)

    def begin(self, thread: ThreadRef, run: str, user: str) -> None:
        """`run` (asked by `user`) works in `thread` from now, for LEASE_S unless renewed."""
        now = self.clock()
        args: list[str | float] = [thread.thread_ts, run, user, now, now + LEASE_S, int(LEASE_S) + 1]
        self._begin(keys=[self._runs_key(thread)], args=args)

    def renew(self, runs: list[RunEntry]) -> list[str | None]:
        """Renew the leases of `runs`: for each, who stopped it (None: nobody). A script a run,
        not a pipeline: Redis Cluster pipelines do not load scripts, and a process works on a
        few dozen runs at most."""
        until = self.clock() + LEASE_S
        found = []
        for entry in runs:
            args: list[str | float] = [entry.thread.thread_ts, entry.run, until, int(LEASE_S) + 1, entry.user]
            by = self._renew(keys=[self._runs_key(entry.thread)], args=args)
            found.append(str(by) if by else None)
        return found

    def end(self, thread: ThreadRef, run: str) -> None:
        self._end(keys=[self._runs_key(thread)], args=[thread.thread_ts, run])

    def stop(self, thread: ThreadRef, user: str, delivery: str) -> StopRequest:
        """Mark the run working in `thread` stopped by `user`: one script, whichever process asks.
        `delivery` names this request as Slack sent it: sent again, it is `seen` and changes nothing."""
        keys = [self._runs_key(thread), self._seen_key(thread, delivery)]
        outcome, run, asker = self._stop(keys=keys, args=[thread.thread_ts, user, self.clock(), SEEN_TTL_S])
        kind = {0: Stop.ended, 1: Stop.first, 2: Stop.again, 3: Stop.seen}[int(outcome)]
        return StopRequest(kind, str(run), str(asker))

    def working(self, team: str, channel: str) -> list[RunEntry]:
        """The runs working in a channel now (their leases current)."""
        probe = ThreadRef(team=team, channel=channel, thread_ts="0")
        found: dict[str, str] = self.redis.hgetall(self._runs_key(probe))  # type: ignore[assignment]
        now, runs = self.clock(), []
        for thread_ts, raw in found.items():
            entry = json.loads(raw)
            if float(entry["until"]) >= now:
                thread = ThreadRef(team=team, channel=channel, thread_ts=thread_ts)
                runs.append(RunEntry(thread, str(entry["run"]), str(entry["user"])))
        return runs

    def asked(self, thread: ThreadRef, request_id: str, ttl_s: float) -> None:
        """An approval request a run asked for in `thread`, pending until it is decided or expires."""
        key = self._asked_key(thread)
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.sadd(key, request_id)
            pipe.ttl(key)
            _, left = pipe.execute()
        if int(left) < ttl_s:
            self.redis.expire(key, int(ttl_s) + 1)

    def take_asked(self, thread: ThreadRef) -> list[str]:
        """The thread's approval requests asked so far (decided ones included), forgotten here."""
        key = self._asked_key(thread)
        with self.redis.pipeline(transaction=True) as pipe:
            pipe.smembers(key)
            pipe.delete(key)
            members, _ = pipe.execute()
        return sorted(str(m) for m in members)

    def _tag(self, thread: ThreadRef) -> str:
        # Slack ids: never a `}` to end the tag early.
        return "{slack:" + thread.team + ":" + thread.channel + "}"

    def _runs_key(self, thread: ThreadRef) -> str:
        return f"{self.prefix}:runs:{self._tag(thread)}"

    def _seen_key(self, thread: ThreadRef, delivery: str) -> str:
        return f"{self.prefix}:stop-seen:{self._tag(thread)}:{thread.thread_ts}:{delivery}"

    def _asked_key(self, thread: ThreadRef) -> str:
        return f"{self.prefix}:asked:{self._tag(thread)}:{thread.thread_ts}"
