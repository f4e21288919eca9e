-- log.lua: appends lines to the log of an existing task. The log lives for
-- the task's own timeout plus retention, when its hash has them, else for
-- the default TTL.
--
-- KEYS[1] the task's hash
-- KEYS[2] the task's log stream
-- ARGV[1] cap: the stream's MAXLEN
-- ARGV[2] default TTL, ms
-- ARGV[3] the attempt that logs
-- ARGV[4..] the lines (at most cap: the older ones would be trimmed at once)
--
-- Returns 1, or 0 when the task does not exist (nothing is written).
local v = redis.call('HMGET', KEYS[1], 's', 'to', 'ret')
if not v[1] then return 0 end
local ttl = tonumber(ARGV[2])
if v[2] and v[3] then ttl = tonumber(v[2]) + tonumber(v[3]) end
for i = 4, #ARGV do
  redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[1], '*', 'a', ARGV[3], 'm', ARGV[i])
end
redis.call('PEXPIRE', KEYS[2], ttl)
return 1
