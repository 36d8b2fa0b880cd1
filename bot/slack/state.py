"""Slack's shared state in Redis, so several opsbot processes can serve one app side by side.

- seen events: a delivery is worked on once, whatever the retries, twins and replays;
- thread queues: one drainer per thread at a time across processes, messages answered in ts order;
- approvals: pending requests and their single-use decision;
- threads opsbot takes part in, and feedback on answers.

Every operation is one round trip; the ones that decide something are Lua scripts, so two
processes can never both win.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import redis

from bot.slack.jobs import Job, PendingApproval, ThreadRef

_FIRST_DELIVERY = """
for i, key in ipairs(KEYS) do
  if redis.call('exists', key) == 1 then return 0 end
end
for i, key in ipairs(KEYS) do redis.call('set', key, '1', 'EX', ARGV[1]) end
return 1
"""
_ENQUEUE = """
redis.call('zadd', KEYS[1], ARGV[5], ARGV[1])
redis.call('expire', KEYS[1], ARGV[4])
if redis.call('set', KEYS[2], ARGV[2], 'NX', 'PX', ARGV[3]) then return 1 end
return 0
"""
_NEXT = """
if redis.call('get', KEYS[2]) ~= ARGV[1] then return false end
redis.call('pexpire', KEYS[2], ARGV[2])
redis.call('del', KEYS[3])
local popped = redis.call('zpopmin', KEYS[1])
if not popped[1] then return false end
redis.call('set', KEYS[3], popped[1], 'EX', ARGV[3])
return popped[1]
"""
_RELEASE = """
if redis.call('get', KEYS[2]) ~= ARGV[1] then return 1 end
redis.call('del', KEYS[3])
if redis.call('zcard', KEYS[1]) > 0 then return 0 end
redis.call('del', KEYS[2])
return 1
"""
_EXTEND = """
if redis.call('get', KEYS[2]) ~= ARGV[1] then return 0 end
return redis.call('pexpire', KEYS[2], ARGV[2])
"""
_ABANDON = """
if redis.call('get', KEYS[2]) == ARGV[1] then redis.call('del', KEYS[2]) end
return 1
"""
_CLAIM_IDLE = """
if redis.call('zcard', KEYS[1]) == 0 and redis.call('exists', KEYS[3]) == 0 then return 0 end
if not redis.call('set', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return 0 end
local unfinished = redis.call('get', KEYS[3])
if unfinished then
  if string.sub(unfinished, 1, #ARGV[3]) ~= ARGV[3] then unfinished = ARGV[3] .. unfinished end
  redis.call('zadd', KEYS[1], 0, unfinished)
  redis.call('del', KEYS[3])
end
return 1
"""

QUEUE_TTL_S = 24 * 3600
# Marks a job taken over from a dead process: before working on it, look whether it was answered.
RESUMED = "resumed:"


class SlackState:
    def __init__(self, client: redis.Redis, prefix: str = "opsbot:slack", drain_ttl_s: float = 300.0) -> None:
        self.redis = client
        self.prefix = prefix
        self.drain_ttl_ms = int(drain_ttl_s * 1000)
        self._first = client.register_script(_FIRST_DELIVERY)
        self._enqueue = client.register_script(_ENQUEUE)
        self._next = client.register_script(_NEXT)
        self._release = client.register_script(_RELEASE)
        self._claim_idle = client.register_script(_CLAIM_IDLE)
        self._extend = client.register_script(_EXTEND)
        self._abandon = client.register_script(_ABANDON)

    @classmethod
    def from_url(cls, url: str, drain_ttl_s: float = 300.0) -> SlackState:
        client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=5, decode_responses=True)
        return cls(client, drain_ttl_s=drain_ttl_s)

    def first_delivery(self, keys: list[str], ttl_s: int) -> bool:
        """True once for any of `keys`: a retry, a twin or a replay sharing one of them gets False."""
        seen = [f"{self.prefix}:seen:{key}" for key in keys]
        return bool(self._first(keys=seen, args=[ttl_s]))

    def enqueue(self, thread: str, job: Job) -> str | None:
        """Queue `job`; the drain token when this caller must drain the thread, None when another does.

        A thread's queue is ordered by message ts, not by arrival: Slack may deliver two quick
        messages out of order, and they are still answered in the order they were written."""
        token = uuid.uuid4().hex
        order = job.ts or f"{time.time():.6f}"
        claimed = self._enqueue(
            keys=self._queue_keys(thread), args=[job.model_dump_json(), token, self.drain_ttl_ms, QUEUE_TTL_S, order]
        )
        return token if claimed else None

    def next_job(self, thread: str, token: str) -> Job | None:
        """The thread's next job, kept as in flight until the next call: if this process dies
        while working on it, whoever takes the thread over finds it and works on it again."""
        raw = self._next(keys=self._queue_keys(thread), args=[token, self.drain_ttl_ms, QUEUE_TTL_S])
        if not raw:
            return None
        if raw.startswith(RESUMED):
            return Job.model_validate_json(raw.removeprefix(RESUMED)).model_copy(update={"resumed": True})
        return Job.model_validate_json(raw)

    def release(self, thread: str, token: str) -> bool:
        """Stop draining; False when a job arrived meanwhile and the caller must go on."""
        return bool(self._release(keys=self._queue_keys(thread), args=[token]))

    def extend(self, thread: str, token: str) -> bool:
        """Keep draining: a long run must not let the lock lapse and a second drainer start."""
        return bool(self._extend(keys=self._queue_keys(thread), args=[token, self.drain_ttl_ms]))

    def abandon(self, thread: str, token: str) -> None:
        """Give the thread up after a failure; what is left in it is taken over by a janitor."""
        self._abandon(keys=self._queue_keys(thread), args=[token])

    def orphaned_queues(self) -> list[str]:
        """Threads with queued or unfinished jobs and no drainer (its process died)."""
        threads = set()
        for kind in ("queue", "inflight"):
            start = f"{self.prefix}:{kind}:"
            for key in self.redis.scan_iter(start + "*", count=200):
                thread = str(key).removeprefix(start).removeprefix("{").removesuffix("}")
                if not self.redis.exists(self._queue_keys(thread)[1]):
                    threads.add(thread)
        return sorted(threads)

    def claim_idle(self, thread: str) -> str | None:
        """Take over a thread without a drainer; an unfinished job goes back to the queue's head."""
        token = uuid.uuid4().hex
        claimed = self._claim_idle(keys=self._queue_keys(thread), args=[token, self.drain_ttl_ms, RESUMED])
        return token if claimed else None

    def mark_active(self, thread: ThreadRef, ttl_s: int) -> None:
        self.redis.set(f"{self.prefix}:active:{thread.key}", "1", ex=ttl_s)

    def is_active(self, thread: ThreadRef) -> bool:
        return bool(self.redis.exists(f"{self.prefix}:active:{thread.key}"))

    def save_approval(self, pending: PendingApproval, ttl_s: int) -> None:
        self.redis.set(self._approval_key(pending.request.id), pending.model_dump_json(), ex=max(ttl_s, 1))

    def approval(self, request_id: str) -> PendingApproval | None:
        raw = self.redis.get(self._approval_key(request_id))
        return PendingApproval.model_validate_json(raw) if raw else None

    def claim_decision(self, request_id: str, decider: str, ttl_s: int) -> str | None:
        """Claim the one decision on a request: None when this caller won, else who decided first."""
        key = self._approval_key(request_id) + ":decision"
        if self.redis.set(key, decider, nx=True, ex=max(ttl_s, 60)):
            return None
        winner: Any = self.redis.get(key)
        return str(winner or "someone")

    def record_feedback(self, answer_id: str, user: str, value: str, ttl_s: int) -> None:
        key = f"{self.prefix}:feedback:{answer_id}"
        with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(key, user, value)
            pipe.expire(key, ttl_s)
            pipe.execute()

    def feedback(self, answer_id: str) -> dict[str, str]:
        stored: dict[str, str] = self.redis.hgetall(f"{self.prefix}:feedback:{answer_id}")  # type: ignore[assignment]
        return stored

    def ping(self) -> bool:
        try:
            return bool(self.redis.ping())
        except redis.RedisError:
            return False

    def _queue_keys(self, thread: str) -> list[str]:
        # One hash tag for a thread's keys: the scripts touching them work on Redis Cluster too.
        tag = "{" + thread + "}"
        return [f"{self.prefix}:queue:{tag}", f"{self.prefix}:drain:{tag}", f"{self.prefix}:inflight:{tag}"]

    def _approval_key(self, request_id: str) -> str:
        return f"{self.prefix}:approval:{request_id}"
