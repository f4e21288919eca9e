-- flow_create: record a new flow as submitting (flows.go, FlowCreate).
--
-- KEYS[1]  the flow's record (hash)
-- KEYS[2]  the flow's definition (string)
-- ARGV[1]  retention ms
-- ARGV[2]  definition (JSON)
-- ARGV[3]  number of nodes n, then 6 values per node: name, queue, failure
--          policy, parents and children (comma-separated), parent count
--
-- Returns "created", or the state of the flow that exists with this ID
-- (nothing written).
local st = redis.call('HGET', KEYS[1], 'st')
if st then return st end
local t = redis.call('TIME')
local now = tostring(tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
local n = tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'st', 'submitting', 'c', now, 'at', now, 'ret', ARGV[1], 'n', n, 'left', n)
for i = 0, n - 1 do
  local b = 4 + i * 6
  local name = ARGV[b]
  redis.call('HSET', KEYS[1], 'q:' .. name, ARGV[b + 1], 's:' .. name, 'waiting', 'o:' .. name, ARGV[b + 2],
    'p:' .. name, ARGV[b + 3], 'c:' .. name, ARGV[b + 4], 'w:' .. name, ARGV[b + 5])
end
redis.call('SET', KEYS[2], ARGV[2])
return 'created'
