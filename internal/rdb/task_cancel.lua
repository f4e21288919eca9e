-- cancel: drop a pending or scheduled task, or flag an active one.
--
-- KEYS     the queue's keys (see common.lua), then KEYS[17]: the task's hash
-- ARGV[1]  task ID
-- ARGV[2]  (a flow node's cancellation by its flow) the flow's generation:
--          a task revived by a later one (field 'fg') is left alone
--
-- Returns {state before, action}: action "cancelled" (dropped now),
-- "signal" (active: the caller publishes the ID so its worker cancels the
-- handler's context), "final" (already finished: nothing done), "stale"
-- (ARGV[2]: nothing done), or "missing".
local id = ARGV[1]
local h = KEYS[17]
local v = redis.call('HMGET', h, 's', 'k', 'l', 'x')
local st, key = v[1], v[2]
if not st then return {'', 'missing'} end
if ARGV[2] and tonumber(redis.call('HGET', h, 'fg') or '0') > tonumber(ARGV[2]) then return {st, 'stale'} end
if key == '' then key = nil end
local now = now_ms()
if st == 'active' then
  redis.call('HSET', h, 'c', '1')
  return {st, 'signal'}
end
if is_final(st) then return {st, 'final'} end
if st == 'pending' then
  if key then
    redis.call('LREM', KEYS[8] .. key, 1, id)
  elseif v[4] then
    redis.call('XDEL', KEYS[2] .. v[3], v[4])
  end
elseif st == 'scheduled' or st == 'retrying' then
  redis.call('ZREM', KEYS[3], id)
  -- a retrying or snoozed task holds its key (at the head of its list, no
  -- token out): the key moves on to its next task
  if key and (st == 'retrying' or key_holds(key, id)) then advance_key(key, id, true) end
end
redis.call('HSET', h, 's', 'cancelled', 'f', now, 'err', 'cancelled')
count(st, 'cancelled')
event(id, 'cancelled', st, nil, 'cancelled', h)
finish(h, id, 'cancelled', 'C', now)
flush_counts()
return {st, 'cancelled'}
