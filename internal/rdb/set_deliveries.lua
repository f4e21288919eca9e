-- set_deliveries: set the delivery counters of pending entries of one
-- partition, for the holder of its lock. An executor that releases a
-- partition sets them to the number of times its processor was given each
-- entry: entries fetched but never handed out do not count, retries in place
-- do. The next owner's XAUTOCLAIM adds its own delivery to that.
--
-- KEYS[1]  lock of the processor on the partition
-- KEYS[2]  partition stream
-- ARGV[1]  lock token of the caller
-- ARGV[2]  consumer group (the processor)
-- ARGV[3]  consumer (the executor)
-- ARGV[4..] pairs of entry ID, delivery count
--
-- Returns the number of entries set; 0 when the caller does not hold the
-- lock (nothing is changed). Entries no longer pending, or deleted from the
-- stream (XCLAIM would drop those from the pending list), are left alone.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
local set = 0
for i = 4, #ARGV, 2 do
  local id = ARGV[i]
  if #redis.call('XRANGE', KEYS[2], id, id) > 0 then
    local r = redis.call('XCLAIM', KEYS[2], ARGV[2], ARGV[3], 0, id, 'RETRYCOUNT', ARGV[i + 1], 'JUSTID')
    set = set + #r
  end
end
return set
