-- background_record: record a run of a leader-only background task, only
-- for the current holder of the app's leader lease.
--
-- KEYS[1]  the leader lease (string: the holder's lock value)
-- KEYS[2]  the task's record (hash: term, tick, done; same hash slot)
-- ARGV[1]  the caller's lease value (its acquisition's random token and
--          worker ID)
-- ARGV[2]  the caller's term (the lease's fencing token)
-- ARGV[3]  the field: "tick" (a periodic task's last tick run, Unix
--          microseconds) or "done" (a once task completed: the term)
-- ARGV[4]  the field's value
-- ARGV[5]  the record's TTL in milliseconds
--
-- Returns 1 when written, 0 when the caller does not hold the lease, -1
-- when the record is newer: written by a later term, or (tick) holding a
-- tick at or after ARGV[4].
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
local cur = redis.call('HMGET', KEYS[2], 'term', ARGV[3])
if cur[1] and tonumber(cur[1]) > tonumber(ARGV[2]) then
  return -1
end
if ARGV[3] == 'tick' and cur[2] and tonumber(cur[2]) >= tonumber(ARGV[4]) then
  return -1
end
redis.call('HSET', KEYS[2], 'term', ARGV[2], ARGV[3], ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[5])
return 1
