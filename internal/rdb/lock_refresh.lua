-- lock_refresh: extend the locks a caller holds, all in one call (they must
-- share a hash slot on Cluster; on a single server, any number of locks).
--
-- KEYS[i]    a lock
-- ARGV[1]    TTL in milliseconds
-- ARGV[i+1]  the caller's value of KEYS[i]
--
-- Returns the positions (1-based) of the locks the caller no longer holds;
-- every other lock was extended.
local lost = {}
for i, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[i + 1] then
    redis.call('PEXPIRE', key, ARGV[1])
  else
    lost[#lost + 1] = i
  end
end
return lost
