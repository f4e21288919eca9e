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
-- KEYS[5]  the flow's revive set
-- ARGV[1]  node
-- ARGV[2]  outcome: succeeded, failed, dead or cancelled
-- ARGV[3]  result (succeeded) or error
--
-- A node that failed its flow (dead or failed), requeued and now
-- succeeded, resumes the flow: the nodes the failure cancelled are waiting
-- again (their tasks revived: cancelled -> waiting), and the flow goes on
-- from the node.
--
-- Returns {state, expiry ms, r, c, resumed, generation, node, queue, ...
-- (r pairs: to release), node, queue, ... (c pairs: to cancel), node,
-- queue, ... (to revive)}: the flow's state after the call, the end of
-- its retention when it has ended (else 0), whether it resumed (1), its
-- generation (resumes so far: cancellations and revivals carry it) and
-- the nodes whose tasks are to be released (waiting -> pending),
-- cancelled, and revived.
local F, R, X, V = KEYS[1], KEYS[2], KEYS[3], KEYS[5]
local node, outcome, data = ARGV[1], ARGV[2], ARGV[3]

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function pending_work(st)
  local rel, can, rev = redis.call('SMEMBERS', R), redis.call('SMEMBERS', X), redis.call('SMEMBERS', V)
  -- nodes to revive: the flow resumed, maybe with no caller told
  local resumed = 0
  if #rev > 0 then resumed = 1 end
  -- an ended flow's end of retention, for the caller to move it to the
  -- ended flows (the call that ended it may have lost its reply)
  local expiry = 0
  local ev = redis.call('HMGET', F, 'f', 'ret')
  if st ~= 'running' and st ~= 'submitting' and ev[1] then
    local ret = tonumber(ev[2] or '1')
    if ret < 1 then ret = 1 end
    expiry = tonumber(ev[1]) + ret
  end
  local out = {st, expiry, #rel, #can, resumed, tonumber(redis.call('HGET', F, 'g') or '0')}
  for _, set in ipairs({rel, can, rev}) do
    for _, m in ipairs(set) do
      table.insert(out, m)
      table.insert(out, redis.call('HGET', F, 'q:' .. m) or '')
    end
  end
  return out
end

local v = redis.call('HMGET', F, 'st', 's:' .. node, 'o:' .. node, 'ret', 'k:' .. node, 'why')
local st, ns = v[1], v[2]
if not st or not ns then return {'', 0, 0, 0, 0, 0} end
local resumed = 0
local rev = {}
if outcome == 'succeeded' and st == 'failed' and v[6] == node and (ns == 'dead' or ns == 'failed') then
  -- the node that failed the flow was requeued and succeeded: the nodes
  -- the failure cancelled wait again, their tasks to be revived
  resumed = 1
  -- a new generation: the failure's cancellations still under way skip
  -- the tasks revived (their generation is newer)
  redis.call('HINCRBY', F, 'g', 1)
  st = 'running'
  redis.call('HSET', F, 'st', 'running')
  redis.call('HDEL', F, 'f', 'why', 'e:' .. node)
  redis.call('PERSIST', F)
  redis.call('PERSIST', KEYS[4])
  redis.call('HINCRBY', F, 'left', 1)
  -- a parent passes its children when it succeeded, or failed with a
  -- policy other than "fail"; nodes that ended while the flow was failed
  -- passed nobody, so the revived nodes count their parents again
  local function passed(p)
    local pv = redis.call('HMGET', F, 's:' .. p, 'o:' .. p)
    return pv[1] == 'succeeded' or ((pv[1] == 'failed' or pv[1] == 'dead' or pv[1] == 'cancelled') and pv[2] ~= 'fail')
  end
  for m in string.gmatch(redis.call('HGET', F, 'fx') or '', '[^,]+') do
    redis.call('SREM', X, m)
    local ms = redis.call('HGET', F, 's:' .. m)
    if ms == 'queued' then
      -- released before the failure: its task may have been cancelled in
      -- its queue (pending then, so no outcome came back), or still runs
      redis.call('SADD', V, m)
      redis.call('SADD', R, m)
      table.insert(rev, m)
    elseif ms == 'cancelled' then
      redis.call('HINCRBY', F, 'left', 1)
      redis.call('HDEL', F, 'e:' .. m)
      redis.call('SADD', V, m)
      table.insert(rev, m)
      local w = 0
      for p in string.gmatch(redis.call('HGET', F, 'p:' .. m) or '', '[^,]+') do
        if not passed(p) then w = w + 1 end
      end
      redis.call('HSET', F, 'w:' .. m, w)
      if w == 0 then
        redis.call('HSET', F, 's:' .. m, 'queued')
        redis.call('SADD', R, m)
      else
        redis.call('HSET', F, 's:' .. m, 'waiting')
      end
    end
  end
  redis.call('HDEL', F, 'fx')
elseif ns ~= 'queued' and ns ~= 'waiting' then
  return pending_work(st)
end

local now = now_ms()
local nowt = tostring(now)
redis.call('HSET', F, 'at', nowt)
if outcome == 'succeeded' then
  redis.call('HSET', F, 'r:' .. node, data)
else
  redis.call('HSET', F, 'e:' .. node, data)
end
local expiry = 0
local rel, can = {}, {}
local waits = outcome == 'succeeded' and st == 'running' and tonumber(v[5] or '0') > 0
if waits then
  redis.call('HSET', F, 's:' .. node, 'waiting-children')
else
  redis.call('HSET', F, 's:' .. node, outcome)
end

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

if waits then
  -- not ended: its last child added at run time ends it
elseif st ~= 'running' then
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
  redis.call('DEL', V)
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
  -- what a requeue of the node revives
  redis.call('HSET', F, 'fx', table.concat(can, ','))
  finish_flow('failed')
end

-- the revived nodes queued are released with the others
local listed = {}
for _, m in ipairs(rel) do listed[m] = true end
for _, m in ipairs(rev) do
  if not listed[m] and redis.call('HGET', F, 's:' .. m) == 'queued' then table.insert(rel, m) end
end
local out = {st, expiry, #rel, #can, resumed, tonumber(redis.call('HGET', F, 'g') or '0')}
for _, set in ipairs({rel, can, rev}) do
  for _, m in ipairs(set) do
    table.insert(out, m)
    table.insert(out, redis.call('HGET', F, 'q:' .. m))
  end
end
return out
