-- fetch_idle: the fenced read of an idle fetcher's partitions. The fetcher
-- sends it on its connection right behind its blocking XREAD, so that Redis
-- runs it as soon as the blocking read returns (an entry arrived, the block
-- ran out, or CLIENT UNBLOCK), and the entries that woke the fetcher reach
-- it with the same round trip: only the holder of a partition's lock takes
-- them into its pending list, as with fetch.lua.
--
-- KEYS[1..n]     the locks of the partitions
-- KEYS[n+1..2n]  the partition streams
-- ARGV[1]  consumer group (the processor)
-- ARGV[2]  consumer (the executor)
-- ARGV[3]  count: most entries read per partition
-- ARGV[4..3+n]   the caller's lock token of each partition
--
-- The locks are read with one MGET and the partitions still held with one
-- XREADGROUP, which returns the streams with new entries only: two
-- commands whatever the number of partitions, with no entry taken through
-- Lua but those returned.
--
-- Returns {lost, read, i, entries, i, entries, ...}:
--   lost     the indexes (from 1) of partitions whose lock the caller does
--            not hold: nothing of them was read
--   read     1, or 0 when the read failed (a stream or group gone): nothing
--            was read, and the caller reads each partition on its own
--   i, entries  each partition that had new entries, by index, and its
--            entries {{id, {field, value, ...}}, ...} in ID order
local n = #KEYS / 2
local locks = redis.call('MGET', unpack(KEYS, 1, n))
local lost, index = {}, {}
local read = {'XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', ARGV[3], 'STREAMS'}
for i = 1, n do
  if locks[i] == ARGV[3 + i] then
    read[#read + 1] = KEYS[n + i]
    index[KEYS[n + i]] = i
  else
    lost[#lost + 1] = i
  end
end
local held = #read - 7
if held == 0 then return {lost, 1} end
for _ = 1, held do read[#read + 1] = '>' end
local r = redis.pcall(unpack(read))
if type(r) == 'table' and r.err then return {lost, 0} end
local out = {lost, 1}
if r then
  for _, s in ipairs(r) do
    out[#out + 1] = index[s[1]]
    out[#out + 1] = s[2]
  end
end
return out
