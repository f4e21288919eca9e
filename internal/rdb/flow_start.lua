-- flow_start: mark a submitted flow running once all its node tasks exist,
-- and its roots queued (FlowStart).
--
-- KEYS[1]  the flow's record
-- KEYS[2]  the flow's release set (nodes queued, release not confirmed)
-- ARGV     the root nodes (no parents)
--
-- Returns {state, node, queue, node, queue, ...}: the flow's state after
-- the call and the nodes to release (the roots when this call started
-- it; when it had started already, the nodes of the release set).
local st = redis.call('HGET', KEYS[1], 'st')
if not st then return {''} end
local out = {}
if st ~= 'submitting' then
  out[1] = st
  for _, node in ipairs(redis.call('SMEMBERS', KEYS[2])) do
    table.insert(out, node)
    table.insert(out, redis.call('HGET', KEYS[1], 'q:' .. node) or '')
  end
  return out
end
local t = redis.call('TIME')
redis.call('HSET', KEYS[1], 'st', 'running', 'at', tostring(tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)))
out[1] = 'running'
for _, node in ipairs(ARGV) do
  redis.call('HSET', KEYS[1], 's:' .. node, 'queued')
  redis.call('SADD', KEYS[2], node)
  table.insert(out, node)
  table.insert(out, redis.call('HGET', KEYS[1], 'q:' .. node))
end
return out
