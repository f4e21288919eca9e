-- lock_acquire: take a lock that is free (or expired) and hand out a fencing
-- token that grows strictly across the lock's successive holders.
--
-- KEYS[1]  the lock (string)
-- KEYS[2]  the lock's fencing counter (string, no TTL; same hash slot)
-- ARGV[1]  the lock value: a fresh random token per acquisition, followed by
--          the holder's identity (see internal/lease)
-- ARGV[2]  TTL in milliseconds
--
-- Returns {1, fence} when the lock was taken, {0, holder, pttl} when another
-- value holds it (holder is that value, pttl its remaining TTL in
-- milliseconds: when it expires unless refreshed).
--
-- A lock that holds this very value was taken by an earlier try of the same
-- acquisition whose reply was lost (the connection broke after the command
-- was written; the client's own retry may then have met CLUSTERDOWN): it is
-- taken again, its TTL set anew, with a new token, as if it had been free;
-- the values are random, so no other holder has it.
--
-- The token is max(counter + 1, server time in microseconds): it grows by
-- one per acquisition, and it keeps growing even if the counter was lost (a
-- restart without persistence, a failover to a replica that had not seen the
-- last increment), as long as the server clock does not step back.
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local holder = redis.call('GET', KEYS[1]) or ''
  if holder ~= ARGV[1] then
    return {0, holder, redis.call('PTTL', KEYS[1])}
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
local t = redis.call('TIME')
local floor = tonumber(t[1]) * 1000000 + tonumber(t[2])
local fence = math.max((tonumber(redis.call('GET', KEYS[2])) or 0) + 1, floor)
redis.call('SET', KEYS[2], string.format('%d', fence))
return {1, fence}
