-- flow_parents: what a node's handler sees of its parents (FlowParents).
--
-- KEYS[1]  the flow's record
-- ARGV[1]  node
--
-- Returns {parent, state, result, error, ...} for each parent that ended
-- (succeeded, or failed with the policy "continue"); a parent that failed
-- with the policy "ignore" is left out. Nothing for an unknown flow or node.
local F = KEYS[1]
local p = redis.call('HGET', F, 'p:' .. ARGV[1])
local out = {}
if not p then return out end
for parent in string.gmatch(p, '[^,]+') do
  local v = redis.call('HMGET', F, 's:' .. parent, 'r:' .. parent, 'e:' .. parent, 'o:' .. parent)
  if v[1] == 'succeeded' or (v[1] and v[4] == 'continue' and v[1] ~= 'waiting' and v[1] ~= 'queued') then
    table.insert(out, parent)
    table.insert(out, v[1])
    table.insert(out, v[2] or '')
    table.insert(out, v[3] or '')
  end
end
return out
