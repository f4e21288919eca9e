-- alive: list the members whose heartbeat deadline has not passed, on the
-- server's clock (the deadlines are server time too), without removing the
-- others (live_members does that, under the admin lock).
--
-- KEYS[1]  members sorted set of the processor (score = deadline, ms)
--
-- Returns the live member IDs.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZRANGEBYSCORE', KEYS[1], now, '+inf')
