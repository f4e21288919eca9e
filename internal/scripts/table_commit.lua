-- table_commit: apply a processor's table writes and acknowledge the
-- entries they were made for, in one step, while the caller holds the
-- partition's lock.
--
-- KEYS[1]      the partition's lock
-- KEYS[2]      the partition's stream
-- KEYS[3..]    the tables' hashes
-- ARGV[1]      the caller's lock value
-- ARGV[2]      the consumer group
-- ARGV[3]      n, the number of entry IDs
-- ARGV[4..3+n] the entry IDs to acknowledge
-- then triples: table (index into KEYS, from 3), field, value: "s" and the
-- value to set, or "d" to delete the field
--
-- Returns 1 when applied, 0 when the caller does not hold the lock (nothing
-- applied). A script's writes are not undone when a later command fails, so
-- whatever can fail is tried before the first table write: the tables'
-- types, then the acknowledgement (a missing group fails it); an error then
-- means nothing was applied.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
for i = 3, #KEYS do
  local t = redis.call('TYPE', KEYS[i]).ok
  if t ~= 'hash' and t ~= 'none' then
    return redis.error_reply('WRONGTYPE table key ' .. KEYS[i] .. ' holds a ' .. t .. ', not a hash')
  end
end
local n = tonumber(ARGV[3])
if n > 0 then
  redis.call('XACK', KEYS[2], ARGV[2], unpack(ARGV, 4, 3 + n))
end
for i = 4 + n, #ARGV, 3 do
  local t, field, v = KEYS[tonumber(ARGV[i])], ARGV[i + 1], ARGV[i + 2]
  if string.sub(v, 1, 1) == 's' then
    redis.call('HSET', t, field, string.sub(v, 2))
  else
    redis.call('HDEL', t, field)
  end
end
return 1
