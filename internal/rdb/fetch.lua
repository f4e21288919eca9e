-- fetch: read entries of one partition for the holder of its lock (fenced
-- read: an executor that lost the lock can never take entries into its
-- pending list).
--
-- KEYS[1]  lock of the processor on the partition
-- KEYS[2]  partition stream
-- ARGV[1]  lock token of the caller
-- ARGV[2]  consumer group (the processor)
-- ARGV[3]  consumer (the executor)
-- ARGV[4]  count
-- ARGV[5]  "" to read new entries (XREADGROUP >); otherwise the XAUTOCLAIM
--          cursor ("0-0" to start) to take over the group's pending entries
--
-- Returns {status, cursor, entries, counts, deleted, last}:
--   status   0 when the caller does not hold the lock (nothing was read), else 1
--   cursor   the next XAUTOCLAIM cursor ("0-0" when recovery is complete);
--            "" when reading new entries
--   entries  {{id, {field, value, ...}}, ...} in ID order
--   counts   delivery count of each entry (recovery only; new entries: 1)
--   deleted  IDs that were pending but are gone from the stream (recovery)
--   last     ID of the stream's last entry, when no new entry was read
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return {0}
end
if ARGV[5] ~= '' then
  local r = redis.call('XAUTOCLAIM', KEYS[2], ARGV[2], ARGV[3], 0, ARGV[5], 'COUNT', ARGV[4])
  local entries = r[2]
  local counts = {}
  if #entries > 0 then
    local pend = redis.call('XPENDING', KEYS[2], ARGV[2], entries[1][1], entries[#entries][1], #entries + 1)
    local byid = {}
    for _, p in ipairs(pend) do byid[p[1]] = p[4] end
    for i, e in ipairs(entries) do counts[i] = byid[e[1]] or 1 end
  end
  return {1, r[1], entries, counts, r[3] or {}, ''}
end
local r = redis.call('XREADGROUP', 'GROUP', ARGV[2], ARGV[3], 'COUNT', ARGV[4], 'STREAMS', KEYS[2], '>')
if r and r[1] and #r[1][2] > 0 then
  return {1, '', r[1][2], {}, {}, ''}
end
local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
local lastid = '0-0'
if last[1] then lastid = last[1][1] end
return {1, '', {}, {}, {}, lastid}
