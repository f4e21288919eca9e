-- update.lua: records an update (a progress report or a partial result) of
-- an active task: a progress report also becomes the task's 'prog' field.
--
-- KEYS[1] the task's hash
-- KEYS[2] the task's updates stream
-- ARGV[1] kind: 'progress' or 'partial'
-- ARGV[2] data, JSON
-- ARGV[3] cap: the stream's approximate MAXLEN
-- ARGV[4] TTL of the stream, ms
-- ARGV[5] the attempt that reports
--
-- Returns 1, or 0 when the task is not active (nothing is written).
if redis.call('HGET', KEYS[1], 's') ~= 'active' then return 0 end
if ARGV[1] == 'progress' then redis.call('HSET', KEYS[1], 'prog', ARGV[2]) end
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*', 'k', ARGV[1], 'd', ARGV[2], 'a', ARGV[5])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return 1
