-- table_writes: the table writes of a commit, as triples in ARGV from
-- index first to last (key: an index into KEYS; field; value, its first
-- character the operation: "s" and the value to set the hash's field to,
-- "d" to delete the field, "p" and the value to set the string key to,
-- the field then being its expiry in ms, or "l" and a table's changes to
-- append to its change log, the field then being the log's MAXLEN). Put
-- before table_commit.lua and output_commit.lua.

-- check_table_writes records in checked the keys whose type it checked and
-- returns an error reply for a key of another type than its writes need,
-- nil when every key can take them.
local function check_table_writes(first, last, checked)
  for i = first, last, 3 do
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
  return nil
end

-- apply_table_writes applies the writes, checked first.
local function apply_table_writes(first, last)
  for i = first, last, 3 do
    local k, field, v = KEYS[tonumber(ARGV[i])], ARGV[i + 1], ARGV[i + 2]
    local op = string.sub(v, 1, 1)
    if op == 's' then
      redis.call('HSET', k, field, string.sub(v, 2))
    elseif op == 'd' then
      redis.call('HDEL', k, field)
    elseif op == 'l' then
      -- change log (stream.KeepChanges, followed by global tables): one
      -- entry per commit, holding the ID of the log's entry before it, so
      -- a follower that finds another "prev" than the last ID it read
      -- knows it missed entries (trimmed, or the log deleted) and reloads.
      local last_entry = redis.call('XREVRANGE', k, '+', '-', 'COUNT', 1)
      local prev = '0-0'
      if last_entry[1] then prev = last_entry[1][1] end
      redis.call('XADD', k, 'MAXLEN', '~', field, '*', 'prev', prev, 'c', string.sub(v, 2))
    else
      redis.call('SET', k, string.sub(v, 2), 'PX', field)
    end
  end
end
