-- flow_parents: what a node's handler sees of its parents (FlowParents):
-- its parents, and the children each of them added at run time.
--
-- KEYS[1]  the flow's record
-- ARGV[1]  node
--
-- Returns {name, state, result, error, ...} for each of those that ended
-- (succeeded, or failed with the policy "continue"); one that failed with
-- the policy "ignore" is left out. Nothing for an unknown flow or node.
local F = KEYS[1]
local p = redis.call('HGET', F, 'p:' .. ARGV[1])
local out = {}
if not p then return out end
local function add(name)
  local v = redis.call('HMGET', F, 's:' .. name, 'r:' .. name, 'e:' .. name, 'o:' .. name)
  local s = v[1]
  if s == 'succeeded' or (s and v[4] == 'continue' and (s == 'failed' or s == 'dead' or s == 'cancelled')) then
    table.insert(out, name)
    table.insert(out, s)
    table.insert(out, v[2] or '')
    table.insert(out, v[3] or '')
  end
end
for parent in string.gmatch(p, '[^,]+') do
  add(parent)
  for spawned in string.gmatch(redis.call('HGET', F, 'sc:' .. parent) or '', '[^,]+') do add(spawned) end
end
return out
