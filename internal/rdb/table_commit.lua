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
-- then triples: key (index into KEYS, from 3), field, value: "s" and the
-- value to set the hash's field to, "d" to delete the field, or "p" and the
-- value to set the string key to, the field then being its expiry in ms,
-- or "l" and a table's changes to append to its change log (the key), the
-- field then being the log's MAXLEN (see the change-log part below)
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
local checked = {}
for i = 4 + n, #ARGV, 3 do
  local k = KEYS[tonumber(ARGV[i])]
  local op = string.sub(ARGV[i + 2], 1, 1)
  if op ~= 'p' and not checked[k] then
    local want = 'hash'
    if op == 'l' then want = 'stream' end -- change log
    local t = redis.call('TYPE', k).ok
    if t ~= want and t ~= 'none' then
      return redis.error_reply('WRONGTYPE table key ' .. k .. ' holds a ' .. t .. ', not a ' .. want)
    end
    checked[k] = true
  end
end
if n > 0 then
  redis.call('XACK', KEYS[2], ARGV[2], unpack(ARGV, 4, 3 + n))
end
for i = 4 + n, #ARGV, 3 do
  local k, field, v = KEYS[tonumber(ARGV[i])], ARGV[i + 1], ARGV[i + 2]
  local op = string.sub(v, 1, 1)
  if op == 's' then
    redis.call('HSET', k, field, string.sub(v, 2))
  elseif op == 'd' then
    redis.call('HDEL', k, field)
  elseif op == 'l' then
    -- change log (stream.KeepChanges, followed by global tables): one
    -- entry per commit, holding the ID of the log's entry before it, so a
    -- follower that finds another "prev" than the last ID it read knows
    -- it missed entries (trimmed, or the log deleted) and reloads.
    local last = redis.call('XREVRANGE', k, '+', '-', 'COUNT', 1)
    local prev = '0-0'
    if last[1] then prev = last[1][1] end
    redis.call('XADD', k, 'MAXLEN', '~', field, '*', 'prev', prev, 'c', string.sub(v, 2))
  else
    redis.call('SET', k, string.sub(v, 2), 'PX', field)
  end
end
return 1
