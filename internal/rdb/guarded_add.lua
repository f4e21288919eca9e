-- guarded_add: append entries to a partition stream (XADD MAXLEN ~ size)
-- only if trimming cannot drop an entry a consumer group has not processed:
-- for every group, its unread entries (lag) and its pending ones, plus the
-- new entries, must fit in the partition size. XADD MAXLEN ~ keeps at least
-- the last size entries, so then nothing unprocessed is trimmed.
--
-- KEYS[1]  partition stream
-- ARGV[1]  partition size
-- ARGV[2]  n, the number of entries
-- ARGV[3...] for each entry: k, the number of field and value arguments,
--          then the k arguments (key, ..., codec, ..., data, ..., h:NAME, ...)
--
-- Returns {1, {id, ...}} when the entries were added, {0, unprocessed} when
-- they would not fit (unprocessed: the most entries a group has to go, see
-- stream_room.lua, which goes before this script).
local size, n = tonumber(ARGV[1]), tonumber(ARGV[2])
local worst = unprocessed(KEYS[1])
if worst + n > size then
  return {0, worst}
end
local ids, i = {}, 3
for e = 1, n do
  local k = tonumber(ARGV[i])
  local args = {'XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*'}
  for j = 1, k do args[#args + 1] = ARGV[i + j] end
  i = i + k + 1
  ids[e] = redis.call(unpack(args))
end
return {1, ids}
