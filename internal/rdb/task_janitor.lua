-- janitor: forget finished tasks whose retention ended and dead tasks older
-- than the dead age, keeping the counts per state exact.
--
-- KEYS     the queue's keys (see common.lua)
-- ARGV[1]  at most this many tasks of each kind
-- ARGV[2]  dead age ms
--
-- Returns {finished removed, dead removed, next end of retention ms or -1}.
local now = now_ms()
local limit = tonumber(ARGV[1])
local states = {S = 'succeeded', F = 'failed', C = 'cancelled'}
local done = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', now, 'LIMIT', 0, limit)
for _, m in ipairs(done) do
  local id = string.sub(m, 3)
  local h = KEYS[1] .. id
  -- a task requeued from failed has left the done set already
  redis.call('DEL', h)
  count(states[string.sub(m, 1, 1)], nil)
  event(id, 'expired', states[string.sub(m, 1, 1)])
  redis.call('ZREM', KEYS[5], m)
end
local dead = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now - tonumber(ARGV[2]), 'LIMIT', 0, limit)
for _, id in ipairs(dead) do
  redis.call('DEL', KEYS[1] .. id)
  count('dead', nil)
  event(id, 'expired', 'dead')
  redis.call('ZREM', KEYS[4], id)
end
local next = redis.call('ZRANGE', KEYS[5], 0, 0, 'WITHSCORES')
local due = -1
if next[2] then due = tonumber(next[2]) end
flush_counts()
return {#done, #dead, due}
