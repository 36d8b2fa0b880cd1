"""Slack's shared state in Redis, so several opsbot processes can serve one app side by side.

- thread queues: a message is accepted (deduplicated, queued) in one script before Slack gets its
  ack; one drainer per thread at a time across processes, holding a short lease it renews;
  messages answered in ts order; a job is done only once its answer is out;
- feedback on answers: where each agent run answered, and each user's verdict on it.

Every operation is one round trip; the ones that decide something are Lua scripts, so two
processes can never both win. A thread's keys share one hash tag, so each script touches one
Redis Cluster slot.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict

from ..redis.client import REDIS_ERRORS, RedisClient
from ..telemetry import metrics
from .jobs import Job, ThreadRef
from .journal import ActiveThread

# KEYS of every thread script, in this order: 1 queue (zset id -> ts), 2 jobs (hash id -> job),
# 3 marks (hash id -> flags: f first in thread, r resumed), 4 drain (lease token), 5 inflight (id
# being worked on), 6 done (zset id -> when), 7 active (opsbot takes part in the thread).
_CLAIM = """
local function claim(token, lease_ms)
  if not redis.call('set', KEYS[4], token, 'NX', 'PX', lease_ms) then return 0 end
  local unfinished = redis.call('get', KEYS[5])
  if not unfinished then return 1 end
  -- Its drainer died while working on it: it goes first, marked to be looked for before it is redone.
  redis.call('del', KEYS[5])
  redis.call('zadd', KEYS[1], 0, unfinished)
  redis.call('hset', KEYS[3], unfinished, (redis.call('hget', KEYS[3], unfinished) or '') .. 'r')
  return 2
end
"""
# KEYS[8]: the delivery's seen key. ARGV: id, job, score, dedupe ttl s, active ttl s (0: leave it),
# queue ttl s, token, lease ms, require active, flags, replay (a job re-queued by its own process).
_ACCEPT = (
    _CLAIM
    + """
local id = ARGV[1]
if ARGV[9] == '1' and redis.call('exists', KEYS[7]) == 0 then return {0, 0, 0} end
if ARGV[11] == '1' then
  redis.call('set', KEYS[8], '1', 'EX', ARGV[4])
elseif not redis.call('set', KEYS[8], '1', 'NX', 'EX', ARGV[4]) then
  return {1, 0, 0}
end
if redis.call('zscore', KEYS[6], id) or redis.call('get', KEYS[5]) == id then return {1, 0, 0} end
local first = 0
if redis.call('exists', KEYS[7]) == 0 then first = 1 end
if tonumber(ARGV[5]) > 0 then redis.call('set', KEYS[7], '1', 'EX', ARGV[5]) end
if redis.call('hsetnx', KEYS[2], id, ARGV[2]) == 1 then
  local flags = ARGV[10]
  if first == 1 then flags = flags .. 'f' end
  redis.call('hset', KEYS[3], id, flags)
end
redis.call('zadd', KEYS[1], 'NX', ARGV[3], id)
for i = 1, 3 do redis.call('expire', KEYS[i], ARGV[6]) end
return {2, first, claim(ARGV[7], ARGV[8])}
"""
)
_CLAIM_IDLE = (
    _CLAIM
    + """
if redis.call('zcard', KEYS[1]) == 0 and redis.call('exists', KEYS[5]) == 0 then return 0 end
return claim(ARGV[1], ARGV[2])
"""
)
# ARGV: token, lease ms, inflight ttl s.
_NEXT = """
if redis.call('get', KEYS[4]) ~= ARGV[1] then return false end
redis.call('pexpire', KEYS[4], ARGV[2])
while true do
  local popped = redis.call('zpopmin', KEYS[1])
  if not popped[1] then return false end
  local id = popped[1]
  local job = redis.call('hget', KEYS[2], id)
  if job and not redis.call('zscore', KEYS[6], id) then
    redis.call('set', KEYS[5], id, 'EX', ARGV[3])
    return {job, redis.call('hget', KEYS[3], id) or '', popped[2]}
  end
  redis.call('hdel', KEYS[2], id)
  redis.call('hdel', KEYS[3], id)
end
"""
# ARGV: id, now, done ttl s.
_FINISH = """
redis.call('zadd', KEYS[6], ARGV[2], ARGV[1])
redis.call('zremrangebyscore', KEYS[6], '-inf', tonumber(ARGV[2]) - tonumber(ARGV[3]))
redis.call('expire', KEYS[6], ARGV[3])
if redis.call('get', KEYS[5]) == ARGV[1] then redis.call('del', KEYS[5]) end
redis.call('hdel', KEYS[2], ARGV[1])
redis.call('hdel', KEYS[3], ARGV[1])
return 1
"""
_RELEASE = """
if redis.call('get', KEYS[4]) ~= ARGV[1] then return 1 end
if redis.call('zcard', KEYS[1]) > 0 then return 0 end
redis.call('del', KEYS[4])
return 1
"""
_EXTEND = """
if redis.call('get', KEYS[4]) ~= ARGV[1] then return 0 end
return redis.call('pexpire', KEYS[4], ARGV[2])
"""
_ABANDON = """
if redis.call('get', KEYS[4]) == ARGV[1] then redis.call('del', KEYS[4]) end
return 1
"""
# After Redis lost its data: hold the lease again and put back the job being worked on.
# ARGV: token, lease ms, id ('' for none), job, flags, inflight ttl s.
_REASSERT = """
local holder = redis.call('get', KEYS[4])
if holder and holder ~= ARGV[1] then return 0 end
redis.call('set', KEYS[4], ARGV[1], 'PX', ARGV[2])
if ARGV[3] ~= '' and not redis.call('zscore', KEYS[6], ARGV[3]) then
  redis.call('set', KEYS[5], ARGV[3], 'EX', ARGV[6])
  redis.call('hsetnx', KEYS[2], ARGV[3], ARGV[4])
  redis.call('hsetnx', KEYS[3], ARGV[3], ARGV[5])
end
return 1
"""

# KEYS[1]: an answer's feedback (hash user -> verdict). ARGV: user, verdict, ttl s. Returns the
# user's verdict before ('' for none); unchanged when it was this one already.
_VOTE = """
local before = redis.call('hget', KEYS[1], ARGV[1]) or ''
if before ~= ARGV[2] then
  redis.call('hset', KEYS[1], ARGV[1], ARGV[2])
  redis.call('expire', KEYS[1], ARGV[3])
end
return before
"""

QUEUE_TTL_S = 24 * 3600
# Unanswered jobs, done markers and the lease's in-flight record last this long: a day, like Slack's
# own patience for a thread. Done markers let a job re-queued after a Redis restart be skipped.
DONE_TTL_S = QUEUE_TTL_S
# The marks-whole key outlives the janitors that renew it (every few seconds) by an hour: a
# deployment that is down longer vouches afresh, one lease after it starts.
MARKS_WHOLE_TTL_S = 3600


class Accepted(BaseModel):
    """What became of a delivery: queued (maybe for this caller to drain), a duplicate, or not for opsbot."""

    model_config = ConfigDict(frozen=True)

    outcome: Literal["queued", "duplicate", "ignored"]
    first_in_thread: bool = False
    token: str | None = None  # the drain lease, when this caller must drain the thread
    took_over: bool = False  # the lease was a dead drainer's, whose unfinished job is queued again


class Vote(NamedTuple):
    """A feedback click, stored: whether it changed what the user had said of the answer, and what that was."""

    changed: bool
    before: str | None


class SlackState:
    def __init__(
        self,
        client: RedisClient,
        prefix: str = "opsbot:slack",
        *,
        lease_s: float = 15.0,
        clock: Any = time.time,
        intake: RedisClient | None = None,
    ) -> None:
        """`intake`: a client of its own for `accept`, the one call on the ack path, so acks never
        queue behind the workers for a connection of the shared pool (docs/benchmarks.md: Slack)."""
        self.redis = client
        self.intake = intake or client
        self.prefix = prefix
        self.lease_ms = int(lease_s * 1000)
        self.clock = clock
        self._accept = client.register_script(_ACCEPT)
        self._claim_idle = client.register_script(_CLAIM_IDLE)
        self._next = client.register_script(_NEXT)
        self._finish = client.register_script(_FINISH)
        self._release = client.register_script(_RELEASE)
        self._extend = client.register_script(_EXTEND)
        self._abandon = client.register_script(_ABANDON)
        self._reassert = client.register_script(_REASSERT)
        self._vote = client.register_script(_VOTE)

    @property
    def lease_s(self) -> float:
        return self.lease_ms / 1000

    def accept(
        self,
        job: Job,
        delivery: str,
        dedupe_ttl_s: int,
        active_ttl_s: int = 0,
        require_active: bool = False,
        replay: bool = False,
    ) -> Accepted:
        """Queue `job` unless its delivery was seen or it was done already, in one script.

        `delivery` names what Slack may send twice (a retry, the mention/message twin); `active_ttl_s`
        marks the thread as one opsbot takes part in; `require_active` drops the job unless it is one.
        `replay` is a job its own process queues again after Redis forgot it: its delivery was seen,
        by that process, and it may have been answered already; so may a job marked `resumed` (Slack
        delivered it again), whose delivery Redis may have forgotten.

        A thread's queue is ordered by message ts, not by arrival: Slack may deliver two quick
        messages out of order, and they are still answered in the order they were written."""
        token = uuid.uuid4().hex
        keys = [*self._thread_keys(job.thread.key), self._seen_key(job.thread.key, delivery)]
        outcome, first, claimed = self._accept(
            client=self.intake,
            keys=keys,
            args=[
                job.id,
                job.model_dump_json(exclude={"first_in_thread", "resumed"}),
                job.ts or f"{self.clock():.6f}",
                dedupe_ttl_s,
                active_ttl_s,
                QUEUE_TTL_S,
                token,
                self.lease_ms,
                int(require_active),
                "r" if replay or job.resumed else "",
                int(replay),
            ],
        )
        if outcome == 0:
            return Accepted(outcome="ignored")
        if outcome == 1:
            return Accepted(outcome="duplicate")
        return Accepted(
            outcome="queued", first_in_thread=bool(first), token=token if claimed else None, took_over=claimed == 2
        )

    def next_job(self, thread: str, token: str) -> Job | None:
        """The thread's next job, kept as in flight until `finish`: if this process dies while
        working on it, whoever takes the thread over finds it and works on it again."""
        found = self._next(keys=self._thread_keys(thread), args=[token, self.lease_ms, QUEUE_TTL_S])
        if not found:
            return None
        raw, flags, score = found
        if "r" not in flags:
            # Queued at its message's ts (or when opsbot queued it); a job put back after its drainer
            # died is queued at 0, and how long it waited is not known.
            metrics.job_taken(self.clock() - float(score))
        return Job.model_validate_json(raw).model_copy(
            update={"first_in_thread": "f" in flags, "resumed": "r" in flags}
        )

    def finish(self, thread: str, job_id: str) -> None:
        """The job is answered: never worked on again, whoever queues it."""
        self._finish(keys=self._thread_keys(thread), args=[job_id, f"{self.clock():.3f}", DONE_TTL_S])

    def done_among(self, jobs: list[Job]) -> list[bool]:
        """Which of `jobs` are done, in one round trip."""
        with self.redis.pipeline(transaction=False) as pipe:
            for job in jobs:
                pipe.zscore(self._thread_keys(job.thread.key)[5], job.id)
            return [score is not None for score in pipe.execute()]

    def release(self, thread: str, token: str) -> bool:
        """Stop draining; False when a job arrived meanwhile and the caller must go on."""
        return bool(self._release(keys=self._thread_keys(thread), args=[token]))

    def extend(self, thread: str, token: str) -> bool:
        """Keep the lease; False when it lapsed (this process could not reach Redis for a whole lease)."""
        return bool(self._extend(keys=self._thread_keys(thread), args=[token, self.lease_ms]))

    def abandon(self, thread: str, token: str) -> None:
        """Give the thread up; what is left in it is taken over by a janitor."""
        self._abandon(keys=self._thread_keys(thread), args=[token])

    def reassert(self, thread: str, token: str, job: Job | None) -> bool:
        """After Redis lost its data: hold this lease again, with `job` as in flight. False when
        another process holds the thread by now."""
        args: list[str | int] = [token, self.lease_ms, "", "", "", QUEUE_TTL_S]
        if job is not None:
            flags = ("f" if job.first_in_thread else "") + ("r" if job.resumed else "")
            args[2:5] = [job.id, job.model_dump_json(exclude={"first_in_thread", "resumed"}), flags]
        return bool(self._reassert(keys=self._thread_keys(thread), args=args))

    def orphaned_queues(self) -> list[str]:
        """Threads with queued or unfinished jobs and no drainer (its process died)."""
        candidates = set()
        for kind in ("queue", "inflight"):
            start = f"{self.prefix}:{kind}:"
            for key in self.redis.scan_iter(start + "*", count=500):
                candidates.add(str(key).removeprefix(start).removeprefix("{").removesuffix("}"))
        threads = sorted(candidates)
        with self.redis.pipeline(transaction=False) as pipe:
            for thread in threads:
                pipe.exists(self._thread_keys(thread)[3])
            held = pipe.execute()
        return [thread for thread, drained in zip(threads, held, strict=True) if not drained]

    def claim_idle(self, thread: str) -> Accepted | None:
        """Take over a thread without a drainer; an unfinished job goes back to the queue's head."""
        token = uuid.uuid4().hex
        claimed = self._claim_idle(keys=self._thread_keys(thread), args=[token, self.lease_ms])
        return Accepted(outcome="queued", token=token, took_over=claimed == 2) if claimed else None

    def marks_whole(self) -> bool:
        """Whether Redis knows every thread opsbot takes part in: false after it lost its data,
        until every live process has had time to mark its threads again (`vouch_marks`)."""
        return bool(self.intake.exists(self._marks_whole_key))

    def vouch_marks(self) -> None:
        """Say the marks are whole; janitors say it every round, so it lapses only with them."""
        self.redis.set(self._marks_whole_key, "1", ex=MARKS_WHOLE_TTL_S)

    def may_take(self, thread: str) -> bool:
        """Whether the thread's next job may be taken: not after Redis lost its data until every live
        process has said which of its threads had jobs Redis forgot (`vouch_queues`), nor while one
        of them still has to queue those again (`replaying`). So a thread's forgotten questions are
        answered before the ones asked since. One round trip."""
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.exists(self._queues_whole_key)
            pipe.exists(self._replaying_key(thread))
            whole, replaying = pipe.execute()
        return bool(whole) and not replaying

    def replaying(self, process: str, threads: set[str], ttl_s: float) -> None:
        """`process` holds jobs of `threads` that Redis forgot, to be queued again (`replayed`)."""
        with self.redis.pipeline(transaction=False) as pipe:
            for thread in threads:
                pipe.sadd(self._replaying_key(thread), process)
                pipe.expire(self._replaying_key(thread), int(ttl_s) + 1)
            pipe.execute()

    def replayed(self, process: str, threads: set[str]) -> None:
        with self.redis.pipeline(transaction=False) as pipe:
            for thread in threads:
                pipe.srem(self._replaying_key(thread), process)
            pipe.execute()

    def vouch_queues(self) -> None:
        """Say every process has marked what it must queue again; janitors say it every round, so
        it lapses only with them."""
        self.redis.set(self._queues_whole_key, "1", ex=MARKS_WHOLE_TTL_S)

    def mark_active(self, threads: list[ActiveThread]) -> None:
        """Mark threads as ones opsbot takes part in, each for its seconds (after Redis forgot them)."""
        with self.redis.pipeline(transaction=False) as pipe:
            for thread, ttl_s in threads:
                pipe.set(self._thread_keys(thread)[6], "1", ex=ttl_s)
            pipe.execute()

    def answering(self, run: str, thread: ThreadRef, ttl_s: int) -> None:
        """Remember, for `ttl_s`, that the agent run `run` answers in `thread`: its answer's feedback
        buttons name the run, and a click is taken only for a run remembered here, in its place."""
        self.redis.set(self._answer_key(run), thread.model_dump_json(), ex=ttl_s)

    def answered_in(self, run: str) -> ThreadRef | None:
        """Where the run `run` answered; None once forgotten (or for a run opsbot never had)."""
        stored = self.redis.get(self._answer_key(run))
        return ThreadRef.model_validate_json(str(stored)) if stored else None

    def record_feedback(self, run: str, user: str, verdict: str, ttl_s: int) -> Vote:
        """`user`'s verdict on the answer of `run`, in one script: one value per user and answer,
        the latest; a verdict the user gave already changes nothing."""
        before = self._vote(keys=[f"{self.prefix}:feedback:{{{run}}}"], args=[user, verdict, ttl_s])
        return Vote(changed=before != verdict, before=before or None)

    def ping(self) -> bool:
        try:
            return bool(self.redis.ping())
        except REDIS_ERRORS:
            return False

    def _answer_key(self, run: str) -> str:
        return f"{self.prefix}:answer:{{{run}}}"

    def _thread_keys(self, thread: str) -> list[str]:
        # One hash tag for a thread's keys: the scripts touching them work on Redis Cluster too. A
        # thread is slack:<team>:<channel>:<ts>, Slack ids and a ts: never a `}` to end the tag early.
        tag = "{" + thread + "}"
        kinds = ("queue", "jobs", "marks", "drain", "inflight", "done", "active")
        return [f"{self.prefix}:{kind}:{tag}" for kind in kinds]

    @property
    def _marks_whole_key(self) -> str:
        return f"{self.prefix}:marks-whole"

    @property
    def _queues_whole_key(self) -> str:
        return f"{self.prefix}:queues-whole"

    def _replaying_key(self, thread: str) -> str:
        return f"{self.prefix}:replaying:{{{thread}}}"

    def _seen_key(self, thread: str, delivery: str) -> str:
        return f"{self.prefix}:seen:{{{thread}}}:{delivery}"
