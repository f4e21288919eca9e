-- flow_node: record how a node's task ended and queue the children that
-- became ready (FlowNode). A node's outcome is recorded once: a call run
-- again (its reply lost) changes nothing and hands back the work still to
-- do, so that a caller finishes what an earlier run started.
--
-- A node whose handler added children at run time (flow_spawn.lua) and
-- succeeded waits for them ("waiting-children") before it ends: the end
-- of its last such child ends it, and releases its own children.
--
-- KEYS[1]  the flow's record
-- KEYS[2]  the flow's release set
-- KEYS[3]  the flow's cancel set
-- KEYS[4]  the flow's definition
-- ARGV[1]  node
-- ARGV[2]  outcome: succeeded, failed, dead or cancelled
-- ARGV[3]  result (succeeded) or error
--
-- Returns {state, expiry ms, r, node, queue, ... (r pairs: to release),
-- node, queue, ... (to cancel)}: the flow's state after the call, the end
-- of its retention when it has ended (else 0), the nodes whose tasks are
-- to be released (waiting -> pending) and those to be cancelled.
local F, R, X = KEYS[1], KEYS[2], KEYS[3]
local node, outcome, data = ARGV[1], ARGV[2], ARGV[3]

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function pending_work(st)
  local out = {st, 0, 0}
  local rel = redis.call('SMEMBERS', R)
  out[3] = #rel
  for _, m in ipairs(rel) do
    table.insert(out, m)
    table.insert(out, redis.call('HGET', F, 'q:' .. m) or '')
  end
  for _, m in ipairs(redis.call('SMEMBERS', X)) do
    table.insert(out, m)
    table.insert(out, redis.call('HGET', F, 'q:' .. m) or '')
  end
  return out
end

local v = redis.call('HMGET', F, 'st', 's:' .. node, 'o:' .. node, 'ret', 'k:' .. node)
local st, ns = v[1], v[2]
if not st or not ns then return {'', 0, 0} end
if ns ~= 'queued' and ns ~= 'waiting' then return pending_work(st) end

local now = now_ms()
local nowt = tostring(now)
redis.call('HSET', F, 'at', nowt)
if outcome == 'succeeded' then
  redis.call('HSET', F, 'r:' .. node, data)
else
  redis.call('HSET', F, 'e:' .. node, data)
end
if outcome == 'succeeded' and st == 'running' and tonumber(v[5] or '0') > 0 then
  redis.call('HSET', F, 's:' .. node, 'waiting-children')
  return {st, 0, 0}
end
redis.call('HSET', F, 's:' .. node, outcome)

local expiry = 0
local rel, can = {}, {}

local function finish_flow(state)
  st = state
  redis.call('HSET', F, 'st', state, 'f', nowt)
  local ret = tonumber(v[4] or '1')
  if ret < 1 then ret = 1 end
  redis.call('PEXPIRE', F, ret)
  redis.call('PEXPIRE', KEYS[4], ret)
  expiry = now + ret
  -- every node ended, so every node was released: what the release set
  -- still holds is confirmations lost
  if state == 'succeeded' then redis.call('DEL', R) end
end

-- ended counts name as ended and, unless it failed the flow, queues its
-- children whose parents have all ended, then ends the node that added
-- it at run time when it was that node's last such child.
local function ended(name, passes)
  redis.call('HINCRBY', F, 'left', -1)
  if passes then
    for child in string.gmatch(redis.call('HGET', F, 'c:' .. name) or '', '[^,]+') do
      local w = redis.call('HINCRBY', F, 'w:' .. child, -1)
      if w == 0 and redis.call('HGET', F, 's:' .. child) == 'waiting' then
        redis.call('HSET', F, 's:' .. child, 'queued')
        redis.call('SADD', R, child)
        table.insert(rel, child)
      end
    end
  end
  local p = redis.call('HGET', F, 'sp:' .. name)
  if p and redis.call('HINCRBY', F, 'k:' .. p, -1) <= 0 and redis.call('HGET', F, 's:' .. p) == 'waiting-children' then
    redis.call('HSET', F, 's:' .. p, 'succeeded')
    ended(p, true)
  end
end

if st ~= 'running' then
  -- a node that ran on while its flow ended: only its outcome is recorded
  redis.call('HINCRBY', F, 'left', -1)
elseif outcome == 'succeeded' or v[3] ~= 'fail' then
  ended(node, true)
  if tonumber(redis.call('HGET', F, 'left')) <= 0 then finish_flow('succeeded') end
else
  -- The node fails the flow: nodes not started are cancelled here, and
  -- every node not ended has its task cancelled (a running one is asked
  -- to stop).
  redis.call('HINCRBY', F, 'left', -1)
  redis.call('HSET', F, 'why', node)
  local all = redis.call('HGETALL', F)
  for i = 1, #all, 2 do
    local f, s = all[i], all[i + 1]
    if string.sub(f, 1, 2) == 's:' and (s == 'waiting' or s == 'queued') then
      local m = string.sub(f, 3)
      if s == 'waiting' then
        redis.call('HSET', F, f, 'cancelled')
        redis.call('HINCRBY', F, 'left', -1)
      end
      redis.call('SADD', X, m)
      redis.call('SREM', R, m)
      table.insert(can, m)
    end
  end
  finish_flow('failed')
end

local out = {st, expiry, #rel}
for _, m in ipairs(rel) do
  table.insert(out, m)
  table.insert(out, redis.call('HGET', F, 'q:' .. m))
end
for _, m in ipairs(can) do
  table.insert(out, m)
  table.insert(out, redis.call('HGET', F, 'q:' .. m))
end
return out
