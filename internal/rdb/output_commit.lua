-- output_commit: apply a processor's table writes, add its staged outputs
-- and acknowledge the entries they were made for, in one step, while the
-- caller holds the partition's lock (table_commit with outputs).
--
-- KEYS[1]      the partition's lock
-- KEYS[2]      the partition's stream
-- KEYS[3]      the processor's commit mark on the partition (Committed)
-- KEYS[4..]    the tables' hashes and string keys written, and the streams
--              the outputs are added to (partitions, or the outbox)
-- ARGV[1]      the caller's lock value
-- ARGV[2]      the consumer group
-- ARGV[3]      the commit's name, unique to it and the same for its retries
-- ARGV[4]      n, the number of entry IDs
-- ARGV[5..4+n] the entry IDs to acknowledge
-- ARGV[5+n]    w, the number of table writes, then w triples as in
--              table_writes.lua (which goes before this script): key
--              (index into KEYS), field, value
-- then, to the end, one group per output: key (index into KEYS), size
-- ("0": no MAXLEN), guard ("1": the stream must have room, see
-- guarded_add.lua), k, then k field and value arguments
--
-- Returns 1 when applied (now, or by an earlier run of the same commit
-- whose reply was lost: the commit mark holds its name), 0 when the caller does not hold the lock, {2,
-- key} when a guarded stream has no room for its outputs: nothing is
-- applied then. Whatever can fail is tried before the first write: the
-- keys' types, the room of guarded streams, then the acknowledgement.
if redis.call('GET', KEYS[3]) == ARGV[3] then
  return 1
end
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
local n = tonumber(ARGV[4])
local w = tonumber(ARGV[5 + n])
local first = 6 + n
local outs = first + 3 * w
local checked = {}
local err = check_table_writes(first, outs - 1, checked)
if err then
  return err
end
local room, sizes = {}, {}
local i = outs
while i <= #ARGV do
  local k = KEYS[tonumber(ARGV[i])]
  if not checked[k] then
    local t = redis.call('TYPE', k).ok
    if t ~= 'stream' and t ~= 'none' then
      return redis.error_reply('WRONGTYPE output key ' .. k .. ' holds a ' .. t .. ', not a stream')
    end
    checked[k] = true
  end
  if ARGV[i + 2] == '1' then
    room[k] = (room[k] or 0) + 1
    sizes[k] = sizes[k] or tonumber(ARGV[i + 1])
  end
  i = i + 4 + tonumber(ARGV[i + 3])
end
for k, count in pairs(room) do
  if unprocessed(k) + count > sizes[k] then
    return {2, k}
  end
end
if n > 0 then
  redis.call('XACK', KEYS[2], ARGV[2], unpack(ARGV, 5, 4 + n))
end
apply_table_writes(first, outs - 1)
i = outs
while i <= #ARGV do
  local k, size, m = KEYS[tonumber(ARGV[i])], ARGV[i + 1], tonumber(ARGV[i + 3])
  local args
  if size == '0' then
    args = {'XADD', k, '*'}
  else
    args = {'XADD', k, 'MAXLEN', '~', size, '*'}
  end
  for j = 1, m do args[#args + 1] = ARGV[i + 3 + j] end
  redis.call(unpack(args))
  i = i + 4 + m
end
redis.call('SET', KEYS[3], ARGV[3])
return 1
