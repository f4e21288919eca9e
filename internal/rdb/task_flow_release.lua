-- flow_release: make a flow's waiting node tasks ready (waiting ->
-- pending). Only a waiting task moves: running the call twice releases
-- nothing twice.
--
-- KEYS     the queue's keys (see common.lua), then KEYS[17..16+n]: the
--          hashes of the n tasks of ARGV, in their order
-- ARGV     the task IDs
--
-- Returns the number of tasks released.
local now = tostring(now_ms())
local made = 0
for i, id in ipairs(ARGV) do
  local h = KEYS[16 + i]
  local v = redis.call('HMGET', h, 's', 'l', 'k')
  if v[1] == 'waiting' then
    redis.call('HSET', h, 's', 'pending', 'd', now)
    if v[3] and v[3] ~= '' then enqueue_keyed(id, v[3]) else push_ready(id, v[2]) end
    count('waiting', 'pending')
    event(id, 'pending', 'waiting', nil, nil, h)
    made = made + 1
  end
end
flush_counts()
return made
