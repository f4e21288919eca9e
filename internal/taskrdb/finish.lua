-- finish: record the outcomes of tasks a worker ran, acknowledging and
-- deleting their ready entries.
--
-- KEYS     the queue's keys (see common.lua)
-- ARGV[1]  consumer (the worker)
-- ARGV[2]  dead set bound (count)
-- ARGV[3]  dead age ms
-- ARGV[4..] groups of 6: task ID, level, entry ID, outcome, data, delay ms;
--          outcome "ok" (data = result), "retry" (data = error; due after
--          delay), "dead", "fail" (data = error), "cancel", or "handback"
--          (a task not run: ready again at once, its attempt not counted)
--
-- Returns one flag per task: 1 when the outcome was recorded, 0 when the
-- task was no longer this worker's (reclaimed, cancelled, gone). A success
-- is recorded even when the task was reclaimed meanwhile (its new entry is
-- then deleted), so a late success is never run again.
local consumer, dead_max, dead_age = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local now = now_ms()
local out = {}
for i = 4, #ARGV, 6 do
  local id, level, eid, outcome, data, delay = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], tonumber(ARGV[i + 5])
  local stream = KEYS[2] .. level
  local acked = redis.call('XACK', stream, GROUP, eid)
  redis.call('XDEL', stream, eid)
  local h = KEYS[1] .. id
  local v = redis.call('HMGET', h, 's', 'w', 'k', 'c', 'x', 'l')
  local st, key = v[1], v[3]
  if key == '' then key = nil end
  local applied = 0
  if outcome == 'ok' and (st == 'active' or st == 'pending') then
    if st == 'pending' and not key and v[5] then
      redis.call('XDEL', KEYS[2] .. v[6], v[5]) -- the reclaimed copy
    end
    redis.call('HSET', h, 'res', data)
    redis.call('HDEL', h, 'err')
    count(st, 'succeeded')
    finish(h, id, 'succeeded', 'S', now)
    if key then advance_key(key, id, st == 'active') end
    applied = 1
  elseif outcome ~= 'ok' and st == 'active' and acked == 1 and v[2] == consumer then
    if v[4] == '1' and outcome ~= 'handback' then outcome = 'cancel'; data = 'cancelled' end
    if outcome == 'retry' then
      redis.call('HSET', h, 's', 'retrying', 'err', data, 'd', now + delay)
      redis.call('ZADD', KEYS[3], now + delay, id)
      count('active', 'retrying')
      wake_if_first(id)
    elseif outcome == 'dead' then
      redis.call('HSET', h, 'err', data)
      count('active', 'dead')
      bury(h, id, now, dead_max, dead_age)
      if key then advance_key(key, id, true) end
    elseif outcome == 'fail' or outcome == 'cancel' then
      redis.call('HSET', h, 'err', data)
      if outcome == 'fail' then
        count('active', 'failed')
        finish(h, id, 'failed', 'F', now)
      else
        count('active', 'cancelled')
        finish(h, id, 'cancelled', 'C', now)
      end
      if key then advance_key(key, id, true) end
    elseif outcome == 'handback' then
      redis.call('HSET', h, 's', 'pending')
      redis.call('HINCRBY', h, 'a', -1)
      count('active', 'pending')
      if key then token(key) else push_ready(id, level) end
    end
    applied = 1
  end
  table.insert(out, applied)
end
return out
