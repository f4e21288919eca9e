-- lock_refresh: extend a lock the caller holds.
--
-- KEYS[1]  the lock
-- ARGV[1]  the caller's lock value
-- ARGV[2]  TTL in milliseconds
--
-- Returns 1 when the lock was extended, 0 when the caller does not hold it.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
