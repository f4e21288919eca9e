-- fetch: take ready tasks for a worker and mark them active, in one step.
--
-- KEYS     the queue's keys (see common.lua)
-- ARGV[1]  consumer (the worker)
-- ARGV[2]  per-key rate limit: tasks per window (0 = none; keyed queues)
-- ARGV[3]  rate window ms
-- ARGV[4]  "read": read new entries here; "given": the entries follow
-- read:    ARGV[5] number of levels n, ARGV[6..5+n] quota per level,
--          ARGV[6+n] total: levels are read up to their quota in order, then
--          the rest is filled from the levels in order (strict priority =
--          the whole total as the first level's quota)
-- given:   groups of level, entry ID, field ("t" or "k"), value, of entries
--          the worker read with a blocking XREADGROUP
--
-- Returns {level, entry ID, task ID, payload, attempts, max retries,
-- timeout ms, key, enqueued ms} per task taken. Entries whose task is no
-- longer pending (cancelled, gone) are acknowledged and deleted, but for
-- one that this consumer took with this very entry: a call run again after
-- its reply was lost hands it out again. A key over its rate limit is
-- parked in the scheduled set until its window ends (its token is deleted;
-- promote.lua gives it a new one).
local consumer = ARGV[1]
local rate, window = tonumber(ARGV[2]), tonumber(ARGV[3])
local now = now_ms()
local out = {}

-- drop acknowledges and deletes the entry of a task not taken.
local function drop(level, eid)
  local stream = KEYS[2] .. level
  redis.call('XACK', stream, GROUP, eid)
  redis.call('XDEL', stream, eid)
end

local function take(level, eid, field, value)
  local id, key = value, nil
  if field == 'k' then
    key = value
    id = redis.call('LINDEX', KEYS[8] .. key, 0)
    if not id then
      drop(level, eid)
      redis.call('SREM', KEYS[9], key)
      return
    end
  end
  local h = KEYS[1] .. id
  local v = redis.call('HMGET', h, 's', 'p', 'a', 'r', 'to', 'e', 'c', 'x', 'l', 'w')
  if v[1] == 'active' and v[8] == eid and v[9] == tostring(level) and v[10] == consumer then
    -- Taken by an earlier run of this very call, whose reply was lost (a
    -- client sends a call again when its reply breaks off or times out):
    -- handed out again as it was taken then. Nothing else hands this
    -- consumer an entry its task is already active on.
    table.insert(out, {tonumber(level), eid, id, v[2], tonumber(v[3]), tonumber(v[4]), tonumber(v[5]), key or '', tonumber(v[6])})
    return
  end
  if key and rate > 0 and v[1] == 'pending' then
    local rk = KEYS[11] .. key
    local used = redis.call('INCR', rk)
    if used == 1 then redis.call('PEXPIRE', rk, window) end
    if used > rate then
      local ttl = redis.call('PTTL', rk)
      if ttl < 0 then ttl = window; redis.call('PEXPIRE', rk, window) end
      drop(level, eid)
      redis.call('ZADD', KEYS[3], now + ttl, PARKED .. key)
      wake_if_first(PARKED .. key)
      return
    end
  end
  if v[1] ~= 'pending' then
    drop(level, eid)
    if key and (not v[1] or is_final(v[1])) then advance_key(key, id, true) end
    return
  end
  local a = tonumber(v[3]) + 1
  if v[8] == eid and v[9] == tostring(level) then
    redis.call('HSET', h, 's', 'active', 'a', a, 'st', now, 'w', consumer)
  else
    redis.call('HSET', h, 's', 'active', 'a', a, 'st', now, 'w', consumer, 'x', eid, 'l', level)
  end
  if v[7] then redis.call('HDEL', h, 'c') end
  count('pending', 'active')
  table.insert(out, {tonumber(level), eid, id, v[2], a, tonumber(v[4]), tonumber(v[5]), key or '', tonumber(v[6])})
end

local function read(level, n)
  if n <= 0 then return 0 end
  local r = redis.call('XREADGROUP', 'GROUP', GROUP, consumer, 'COUNT', n, 'STREAMS', KEYS[2] .. level, '>')
  if not r then return 0 end
  local got = 0
  for _, e in ipairs(r[1][2]) do
    take(level, e[1], e[2][1], e[2][2])
    got = got + 1
  end
  return got
end

if ARGV[4] == 'read' then
  local n = tonumber(ARGV[5])
  local left = tonumber(ARGV[6 + n])
  for l = 0, n - 1 do
    left = left - read(l, math.min(tonumber(ARGV[6 + l]), left))
  end
  for l = 0, n - 1 do
    if left <= 0 then break end
    left = left - read(l, left)
  end
else
  for i = 5, #ARGV, 4 do take(ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]) end
end
flush_counts()
return out
