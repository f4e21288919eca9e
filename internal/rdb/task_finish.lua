-- finish: record the outcomes of tasks a worker ran, acknowledging their
-- ready entries (trim removes them from the stream).
--
-- KEYS     the queue's keys (see common.lua), then KEYS[17..16+n]: the
--          hashes of the n tasks of ARGV, in their order
-- ARGV[1]  consumer (the worker)
-- ARGV[2]  dead set bound (count)
-- ARGV[3]  dead age ms
-- ARGV[4..] groups of 6: task ID, level, entry ID, outcome, data, delay ms;
--          outcome "ok" (data = result), "retry" (data = error; due after
--          delay), "dead", "fail" (data = error), "cancel", "handback"
--          (a task not run: ready again at once, its attempt not counted)
--          or "snooze" (scheduled after delay, its attempt not counted; a
--          keyed task stays at the head of its key's list)
--
-- Returns per task the state the outcome left it in: "succeeded",
-- "retrying", "dead", "failed", "cancelled" (a cancellation requested
-- while it ran wins over a failure or a snooze), "pending" (handed back),
-- "scheduled" (snoozed); or "" when
-- the run was no longer the task's current one (reclaimed meanwhile, or the
-- task is gone) and nothing was recorded. A success is recorded even then
-- (the reclaimed copy's entry is deleted when no worker took it yet), so a
-- late success is not run again.
local consumer, dead_max, dead_age = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local now = now_ms()
local now_text = tostring(now)
local out = {}
-- the entries to acknowledge, by level: one XACK per level and call (see
-- trim for how they leave the stream)
local gone, levels = {}, {}

for i = 4, #ARGV, 6 do
  local id, level, eid, outcome, data, delay = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], tonumber(ARGV[i + 5])
  local g = gone[level]
  if not g then g = {}; gone[level] = g; table.insert(levels, level) end
  table.insert(g, eid)
  local h = KEYS[17 + (i - 4) / 6]
  -- the fields every outcome reads (cancel requested, the level and the
  -- key's pass flag are read where needed, for fewer outcomes)
  local v = redis.call('HMGET', h, 's', 'w', 'k', 'x', 'ret', 'u', 'err', 'wh')
  local wh = v[8] and true or false
  local st, key = v[1], v[3]
  if key == '' then key = nil end
  -- this run is the task's current one: nobody reclaimed it meanwhile.
  -- The hash says so: the reclaimer acknowledges an entry in the same step
  -- as it makes the task pending (or dead), and a task taken again holds
  -- the entry ID of that take, so a task active with this worker and this
  -- entry ID has its entry still pending with this worker.
  local mine = st == 'active' and v[2] == consumer and v[4] == eid
  local applied = ''
  if outcome == 'ok' and (st == 'active' or st == 'pending') then
    if st == 'pending' and not key and v[4] then
      redis.call('XDEL', KEYS[2] .. redis.call('HGET', h, 'l'), v[4]) -- the reclaimed copy, not taken yet
    end
    redis.call('HSET', h, 's', 'succeeded', 'f', now_text, 'res', data)
    if v[7] then redis.call('HDEL', h, 'err') end
    count(st, 'succeeded')
    event(id, 'succeeded', st, nil, nil, h)
    finish(h, id, 'succeeded', 'S', now, v[5], v[6], wh)
    -- A keyed task's key moves on with whoever holds its token: this run;
    -- or the run of the reclaimed copy, which passes it on when it finishes
    -- (flag "pass", below); or the token waiting in the stream, which finds
    -- the next task.
    if key then
      advance_key(key, id, mine)
      if st == 'active' and not mine then redis.call('HSET', h, 'pass', '1') end
    end
    applied = 'succeeded'
  elseif outcome ~= 'ok' and mine then
    if outcome ~= 'handback' and redis.call('HGET', h, 'c') == '1' then outcome = 'cancel'; data = 'cancelled' end
    if outcome == 'retry' then
      applied = 'retrying'
      redis.call('HSET', h, 's', 'retrying', 'err', data, 'd', now + delay)
      redis.call('ZADD', KEYS[3], now + delay, id)
      count('active', 'retrying')
      event(id, 'retrying', 'active', nil, data, h)
      wake_if_first(id)
    elseif outcome == 'dead' then
      applied = 'dead'
      redis.call('HSET', h, 'err', data)
      count('active', 'dead')
      event(id, 'dead', 'active', nil, data, h)
      bury(h, id, now, dead_max, dead_age)
      if key then advance_key(key, id, true) end
    elseif outcome == 'fail' or outcome == 'cancel' then
      if outcome == 'fail' then
        applied = 'failed'
        redis.call('HSET', h, 's', 'failed', 'f', now_text, 'err', data)
        count('active', 'failed')
        event(id, 'failed', 'active', nil, data, h)
        finish(h, id, 'failed', 'F', now, v[5], v[6], wh)
      else
        applied = 'cancelled'
        redis.call('HSET', h, 's', 'cancelled', 'f', now_text, 'err', data)
        count('active', 'cancelled')
        event(id, 'cancelled', 'active', nil, data, h)
        finish(h, id, 'cancelled', 'C', now, v[5], v[6], wh)
      end
      if key then advance_key(key, id, true) end
    elseif outcome == 'snooze' then
      applied = 'scheduled'
      redis.call('HSET', h, 's', 'scheduled', 'd', now + delay)
      redis.call('HINCRBY', h, 'a', -1)
      redis.call('ZADD', KEYS[3], now + delay, id)
      count('active', 'scheduled')
      event(id, 'scheduled', 'active', nil, nil, h)
      wake_if_first(id)
    elseif outcome == 'handback' then
      applied = 'pending'
      redis.call('HSET', h, 's', 'pending')
      redis.call('HINCRBY', h, 'a', -1)
      count('active', 'pending')
      event(id, 'pending', 'active', nil, nil, h)
      if key then token(key) else push_ready(id, level) end
    end
  elseif key and v[2] == consumer and v[4] == eid and redis.call('HGET', h, 'pass') == '1'
    and redis.call('XACK', KEYS[2] .. level, GROUP, eid) == 1 then
    -- A late success of an earlier run ended the task while this run held
    -- the key's token: pass the token on, unless the reclaimer took the
    -- entry meanwhile (it passed the token on itself).
    redis.call('HDEL', h, 'pass')
    advance_key(key, id, true)
  end
  table.insert(out, applied)
end
for _, level in ipairs(levels) do
  local stream, ids = KEYS[2] .. level, gone[level]
  redis.call('XACK', stream, GROUP, unpack(ids))
  trim(stream, ids, now)
end
flush_counts()
return out
