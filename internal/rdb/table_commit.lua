-- table_commit: apply a processor's table writes and acknowledge the
-- entries they were made for, in one step, while the caller holds the
-- partition's lock.
--
-- KEYS[1]      the partition's lock
-- KEYS[2]      the partition's stream
-- KEYS[3..]    the tables' hashes and the string keys written
-- ARGV[1]      the caller's lock value
-- ARGV[2]      the consumer group
-- ARGV[3]      n, the number of entry IDs
-- ARGV[4..3+n] the entry IDs to acknowledge
-- then triples: key (index into KEYS, from 3), field, value (see
-- table_writes.lua, which goes before this script)
--
-- Returns 1 when applied, 0 when the caller does not hold the lock (nothing
-- applied). A script's writes are not undone when a later command fails, so
-- whatever can fail is tried before the first write: the tables' types,
-- then the acknowledgement (a missing group fails it); an error then means
-- nothing was applied.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
local n = tonumber(ARGV[3])
local err = check_table_writes(4 + n, #ARGV, {})
if err then
  return err
end
if n > 0 then
  redis.call('XACK', KEYS[2], ARGV[2], unpack(ARGV, 4, 3 + n))
end
apply_table_writes(4 + n, #ARGV)
return 1
