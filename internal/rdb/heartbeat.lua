-- heartbeat: record that an executor is alive until now + ttl (server time)
-- and report members whose heartbeat expired.
--
-- KEYS[1]  members sorted set of the processor (score = deadline, ms)
-- ARGV[1]  executor ID
-- ARGV[2]  heartbeat TTL in milliseconds
--
-- Returns {present, expired}: present is 1 when the executor was a member
-- before this call (0 means it is new or was reaped as dead), expired the
-- list of other members whose deadline has passed.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local present = 1
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then present = 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. now)
return {present, expired}
