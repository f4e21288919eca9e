-- live_members: remove members whose heartbeat expired and list the others.
--
-- KEYS[1]  members sorted set of the processor (score = deadline, ms)
--
-- Returns {live, removed}: the live member IDs, and the expired ones this
-- call removed.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local removed = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. now)
if #removed > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. now)
end
return {redis.call('ZRANGE', KEYS[1], 0, -1), removed}
