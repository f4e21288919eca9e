-- flow_spawn: add a child to a running node at run time (FlowSpawn): a
-- node of no parents, queued at once, whose end the node waits for
-- before it ends itself. The child's task is created and released by the
-- caller after this call; its definition is kept in the record, so that
-- the sweep creates it if the caller dies first.
--
-- KEYS[1]  the flow's record
-- KEYS[2]  the flow's release set
-- ARGV[1]  the running node
-- ARGV[2]  the child's name
-- ARGV[3]  the child's queue
-- ARGV[4]  the child's failure policy
-- ARGV[5]  the child's task (JSON, as the flow's definition holds it)
--
-- Returns {"added"}, {"exists"} (added by an earlier call of this node:
-- a run again after a lost reply, or a retried attempt), or {"refused",
-- why}.
local F = KEYS[1]
local parent, child = ARGV[1], ARGV[2]
local st = redis.call('HGET', F, 'st')
if st ~= 'running' then return {'refused', 'the flow is ' .. (st or 'gone')} end
local ps = redis.call('HGET', F, 's:' .. parent)
if ps ~= 'queued' then return {'refused', 'node ' .. parent .. ' is ' .. (ps or 'unknown')} end
if redis.call('HEXISTS', F, 's:' .. child) == 1 then
  if redis.call('HGET', F, 'sp:' .. child) == parent then return {'exists'} end
  return {'refused', 'the flow has a node named ' .. child}
end
local t = redis.call('TIME')
redis.call('HSET', F, 'q:' .. child, ARGV[3], 's:' .. child, 'queued', 'o:' .. child, ARGV[4], 'p:' .. child, '',
  'c:' .. child, '', 'w:' .. child, '0', 'sp:' .. child, parent, 't:' .. child, ARGV[5],
  'at', tostring(tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)))
redis.call('HINCRBY', F, 'n', 1)
redis.call('HINCRBY', F, 'left', 1)
redis.call('HINCRBY', F, 'k:' .. parent, 1)
local sc = redis.call('HGET', F, 'sc:' .. parent)
if sc and sc ~= '' then sc = sc .. ',' .. child else sc = child end
redis.call('HSET', F, 'sc:' .. parent, sc)
redis.call('SADD', KEYS[2], child)
return {'added'}
