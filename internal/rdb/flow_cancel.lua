-- flow_cancel: cancel a running flow (FlowCancel): nodes not started are
-- cancelled here, and every node not ended has its task cancelled.
--
-- KEYS[1]  the flow's record
-- KEYS[2]  the flow's release set
-- KEYS[3]  the flow's cancel set
-- KEYS[4]  the flow's definition
-- KEYS[5]  the flow's revive set
--
-- Returns {state before, expiry ms, generation, node, queue, ...}: the
-- flow's generation (see flow_node.lua) and the nodes whose
-- tasks are to be cancelled; the state before is "" for no such flow, and
-- a flow that is not running is left alone.
local F = KEYS[1]
local v = redis.call('HMGET', F, 'st', 'ret')
if not v[1] then return {''} end
if v[1] ~= 'running' then return {v[1]} end
redis.call('DEL', KEYS[5])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {'running', 0, tonumber(redis.call('HGET', F, 'g') or '0')}
local all = redis.call('HGETALL', F)
for i = 1, #all, 2 do
  local f, s = all[i], all[i + 1]
  if string.sub(f, 1, 2) == 's:' and (s == 'waiting' or s == 'queued') then
    local m = string.sub(f, 3)
    if s == 'waiting' then
      redis.call('HSET', F, f, 'cancelled')
      redis.call('HINCRBY', F, 'left', -1)
    end
    redis.call('SADD', KEYS[3], m)
    redis.call('SREM', KEYS[2], m)
    table.insert(out, m)
    table.insert(out, redis.call('HGET', F, 'q:' .. m))
  end
end
local ret = tonumber(v[2] or '1')
if ret < 1 then ret = 1 end
redis.call('HSET', F, 'st', 'cancelled', 'f', tostring(now), 'at', tostring(now))
redis.call('PEXPIRE', F, ret)
redis.call('PEXPIRE', KEYS[4], ret)
out[2] = now + ret
return out
