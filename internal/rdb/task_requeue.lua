-- requeue: make a dead or failed task ready again, with its attempts reset.
--
-- KEYS     the queue's keys (see common.lua), then KEYS[17]: the task's hash
-- ARGV[1]  task ID
--
-- Returns the state before; the task was requeued when it is "dead" or
-- "failed".
local id = ARGV[1]
local h = KEYS[17]
local v = redis.call('HMGET', h, 's', 'k', 'l')
local st, key = v[1], v[2]
if not st then return '' end
if st == 'dead' then
  redis.call('ZREM', KEYS[4], id)
elseif st == 'failed' then
  redis.call('ZREM', KEYS[5], 'F|' .. id)
else
  return st
end
redis.call('PERSIST', h)
redis.call('HSET', h, 's', 'pending', 'a', 0, 'd', now_ms())
redis.call('HDEL', h, 'f', 'res', 'c')
count(st, 'pending')
event(id, 'pending', st, '0')
if key and key ~= '' then enqueue_keyed(id, key) else push_ready(id, v[3]) end
flush_counts()
return st
