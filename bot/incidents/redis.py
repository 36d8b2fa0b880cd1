"""Incident records in Redis (the store of Slack mode, and of the terminal when REDIS_URL is set).

In Redis, under one hash tag (one Cluster slot, so a pipeline never crosses slots):
  opsbot:incidents:{i}:rec:<id>   the record as JSON, expiring with it
  opsbot:incidents:{i}:exp        sorted set id -> expiry: how many records are alive (for rarity)
  opsbot:incidents:{i}:upd        sorted set id -> last update: the records of a time span
  opsbot:incidents:{i}:t:<term>   sorted set id -> expiry: the inverted index, one set per term
A record's entries in the sets are scored by its expiry, so a read asks only for scores after now
and an expired record is never counted, whatever is left to prune. Expiry is judged by the
store's clock (injected in tests); Redis's own key TTLs only free the memory later.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any, cast

from ..redis.client import REDIS_ERRORS, RedisClient
from .record import IncidentRecord
from .store import Candidates, IncidentsUnavailable, parse, text_of
from .terms import AS_IF_RECORDS

_BASE = "opsbot:incidents:{i}"
COMMON = 0.1  # a term held by more than this share of the live records brings no candidates of its own
NEWEST = 1000  # of the records holding a term, the newest this many bring candidates
# The candidates, in Redis: reading every id of a common term's set into Python costs far more
# than ranking them where they are. KEYS: the expiry set, then one set per term; ARGV: now, the id
# to leave out, how many, the share of live records past which a term is too common to bring
# candidates (it still weighs in the score), the fewest records rarity is judged among, how many
# of a term's records (the newest: a set is scored by expiry) bring candidates. Returns the live
# records' count, each term's, and the best ids by the summed rarity (terms.rarity's formula) of
# the terms that brought them.
_CANDIDATES = """
local now = '(' .. ARGV[1]
local total = redis.call('ZCOUNT', KEYS[1], now, '+inf')
local judged = math.max(total, tonumber(ARGV[5]))
local holding, rarest = {}, 2
for i = 2, #KEYS do
  holding[i - 1] = redis.call('ZCOUNT', KEYS[i], now, '+inf')
  if holding[i - 1] > 0 and (holding[rarest - 1] == 0 or holding[i - 1] < holding[rarest - 1]) then rarest = i end
end
local common = math.max(tonumber(ARGV[3]), total * tonumber(ARGV[4]))
local summed, seen = {}, {}
for i = 2, #KEYS do
  local count = holding[i - 1]
  if count > 0 and (count <= common or i == rarest) then
    local weight = math.log(1 + (judged - count + 0.5) / (count + 0.5))
    for _, id in ipairs(redis.call('ZREVRANGEBYSCORE', KEYS[i], '+inf', now, 'LIMIT', 0, ARGV[6])) do
      if id ~= ARGV[2] then
        if summed[id] == nil then summed[id] = 0; seen[#seen + 1] = id end
        summed[id] = summed[id] + weight
      end
    end
  end
end
table.sort(seen, function(a, b) if summed[a] ~= summed[b] then return summed[a] > summed[b] end return a < b end)
local best = {}
for i = 1, math.min(tonumber(ARGV[3]), #seen) do best[i] = seen[i] end
return {total, holding, best}
"""


class RedisIncidents:
    def __init__(self, redis: RedisClient, clock: Callable[[], float] = time.time) -> None:
        self.redis = redis
        self.clock = clock
        self._candidates = redis.register_script(_CANDIDATES)

    def put(self, record: IncidentRecord) -> None:
        now = self.clock()
        ttl_ms = max(1, int((record.expires_at - now) * 1000))
        before = self.get(record.id)
        gone = set(before.terms) - set(record.terms) if before is not None else set()
        try:
            pipe = self.redis.pipeline(transaction=False)
            pipe.set(f"{_BASE}:rec:{record.id}", record.model_dump_json(), px=ttl_ms)
            for name, score in (("exp", record.expires_at), ("upd", record.updated.timestamp())):
                pipe.zadd(f"{_BASE}:{name}", {record.id: score})
                pipe.pexpire(f"{_BASE}:{name}", ttl_ms)
            for term in gone:
                pipe.zrem(f"{_BASE}:t:{term}", record.id)
            for term in record.terms:
                key = f"{_BASE}:t:{term}"
                pipe.zadd(key, {record.id: record.expires_at})
                # Every record lives as long, so the latest written outlives the others in the set.
                pipe.pexpire(key, ttl_ms)
            pipe.execute()
        except REDIS_ERRORS as exc:
            raise IncidentsUnavailable(str(exc)) from exc
        self._prune_updates(now)

    def _prune_updates(self, now: float) -> None:
        """Drop ids whose record expired from the update index (the term sets are read after now)."""
        try:
            expired = self.redis.zrangebyscore(f"{_BASE}:exp", "-inf", now)
            if expired:
                self.redis.zrem(f"{_BASE}:upd", *expired)
                self.redis.zrem(f"{_BASE}:exp", *expired)
        except REDIS_ERRORS as exc:
            raise IncidentsUnavailable(str(exc)) from exc

    def get(self, record_id: str) -> IncidentRecord | None:
        found = self.fetch([record_id])
        return found[0] if found else None

    def fetch(self, ids: Iterable[str]) -> list[IncidentRecord]:
        keys = [f"{_BASE}:rec:{key}" for key in ids]
        if not keys:
            return []
        try:
            raws: list[Any] = self.redis.mget(keys)
        except REDIS_ERRORS as exc:
            raise IncidentsUnavailable(str(exc)) from exc
        now = self.clock()
        records = [parse(raw) for raw in raws if raw is not None]
        return [record for record in records if record.expires_at > now]

    def candidates(self, terms: list[str], limit: int, exclude: str | None = None) -> Candidates:
        keys = [f"{_BASE}:exp", *(f"{_BASE}:t:{term}" for term in terms)]
        try:
            args: list[str | int | float] = [repr(self.clock()), exclude or "", limit, COMMON, AS_IF_RECORDS, NEWEST]
            answer = self._candidates(keys=keys, args=args, client=self.redis)
        except REDIS_ERRORS as exc:
            raise IncidentsUnavailable(str(exc)) from exc
        total, holding, ids = answer
        counts = dict(zip(terms, (int(count) for count in holding), strict=True))
        return Candidates(total=int(total), holding=counts, ids=[text_of(i) for i in ids])

    def updated_since(self, since: float) -> list[IncidentRecord]:
        try:
            ids = cast(list[str], self.redis.zrangebyscore(f"{_BASE}:upd", since, "+inf"))
        except REDIS_ERRORS as exc:
            raise IncidentsUnavailable(str(exc)) from exc
        return sorted(self.fetch(text_of(i) for i in ids), key=lambda r: r.updated)

    def keys(self) -> list[str]:
        """Every key the records use (for measuring their memory)."""
        pattern = _BASE.replace("{", "[{]").replace("}", "[}]") + ":*"
        return [text_of(cast(str, key)) for key in self.redis.scan_iter(match=pattern)]

    def describe(self) -> str:
        return "Redis"
