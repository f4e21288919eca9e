-- lock_release: delete a lock the caller holds.
--
-- KEYS[1]  the lock
-- ARGV[1]  the caller's lock value
--
-- Returns 1 when the lock was deleted, 0 when the caller did not hold it.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
