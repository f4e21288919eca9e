-- edit: change a task that waits to run (pending, scheduled or retrying),
-- atomically with respect to a worker taking it.
--
-- KEYS     the queue's keys (see common.lua), then KEYS[17]: the task's hash
-- ARGV[1]  task ID
-- ARGV[2]  what: "now" (make it ready now), "at" (due at ARGV[3], Unix
--          ms), "level" (priority level ARGV[3]) or "payload" (ARGV[3])
--
-- Returns {state before, outcome}: outcome "ok"; "missing"; "running",
-- "ended" or "other" (the task does not wait to run: nothing changed; a
-- flow's node waiting for its parents is "other"); "keyed" (a pending
-- task of a keyed queue waits in its key's line: it cannot be delayed or
-- moved to another level).
local id, what, arg = ARGV[1], ARGV[2], ARGV[3]
local h = KEYS[17]
local v = redis.call('HMGET', h, 's', 'k', 'l', 'x')
local st, key, level, eid = v[1], v[2], v[3], v[4]
if not st then return {'', 'missing'} end
if key == '' then key = nil end
if st == 'active' then return {st, 'running'} end
if is_final(st) then return {st, 'ended'} end
-- a flow's node waiting for its parents ('waiting') is released by its flow
if st ~= 'pending' and st ~= 'scheduled' and st ~= 'retrying' then return {st, 'other'} end

if what == 'payload' then
  redis.call('HSET', h, 'p', arg)
  return {st, 'ok'}
end

-- unready takes a pending unkeyed task's entry out of its ready stream (a
-- worker may hold it pending, kept back by a pause or a rate)
local function unready()
  if not eid then return end
  local stream = KEYS[2] .. level
  redis.call('XACK', stream, GROUP, eid)
  redis.call('XDEL', stream, eid)
  redis.call('HDEL', h, 'x')
end

if what == 'level' then
  if key then return {st, 'keyed'} end
  if st == 'pending' and eid then
    if level == arg then return {st, 'ok'} end
    unready()
    push_ready(id, arg)
  else
    redis.call('HSET', h, 'l', arg)
  end
  return {st, 'ok'}
end

local now = now_ms()
if what == 'at' then
  local at = tonumber(arg)
  if at <= now then what = 'now' end
end

if what == 'now' then
  if st == 'pending' then return {st, 'ok'} end
  redis.call('ZREM', KEYS[3], id)
  redis.call('HSET', h, 's', 'pending', 'd', now)
  count(st, 'pending')
  event(id, 'pending', st, nil, nil, h)
  if not key then
    push_ready(id, level)
  elseif st == 'scheduled' and not key_holds(key, id) then
    enqueue_keyed(id, key) -- a delayed task joins its key's list
  else
    token(key) -- a retrying or snoozed task at the head of its key's list
  end
  flush_counts()
  return {st, 'ok'}
end

-- what == 'at', in the future
if st == 'pending' then
  if key then return {st, 'keyed'} end
  unready()
  redis.call('HSET', h, 's', 'scheduled', 'd', arg)
  count('pending', 'scheduled')
  event(id, 'scheduled', 'pending', nil, nil, h)
else
  redis.call('HSET', h, 'd', arg)
end
redis.call('ZADD', KEYS[3], arg, id)
wake_if_first(id)
flush_counts()
return {st, 'ok'}
