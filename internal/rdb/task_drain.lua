-- drain: delete tasks waiting to run (pending, scheduled and retrying),
-- at most ARGV[2] looked at per call; running and ended tasks stay.
--
-- KEYS     the queue's keys (see common.lua), then
--          KEYS[17] progress and partial results prefix (+ task ID)
--          KEYS[18] log prefix (+ task ID)
-- ARGV[1]  the number of priority levels
-- ARGV[2]  at most this many entries, members or keys looked at
-- ARGV[3]  where the last call left off: "PHASE CURSOR" ("" to start):
--          "s OFFSET" the scheduled set (members kept: keys waiting out
--          their rate), "l LEVEL ID" a ready stream after entry ID, "k
--          CURSOR" the keys of a keyed queue (SSCAN)
--
-- Returns {deleted, next}: next is "" once every phase is done. The task
-- IDs read from the scheduled set, the streams and the key lists complete
-- the prefixes (see common.lua). Entries of deleted tasks are acknowledged
-- and deleted; a key's token whose list is left empty is dropped by the
-- next fetch that reads it, as a cancelled key's is.
local levels, budget = tonumber(ARGV[1]), tonumber(ARGV[2])
local phase, a, b = string.match(ARGV[3], '^(%a) ?(%S*) ?(%S*)$')
if not phase then phase, a, b = 's', '0', '' end
local deleted = 0

local function delete(id, st)
  local h = KEYS[1] .. id
  release_unique(h, id)
  redis.call('DEL', h, KEYS[17] .. id, KEYS[18] .. id)
  count(st, nil)
  event(id, 'deleted', st)
  deleted = deleted + 1
end

if phase == 's' then
  local offset = tonumber(a) or 0
  local ids = redis.call('ZRANGE', KEYS[3], offset, offset + budget - 1)
  for _, id in ipairs(ids) do
    if string.sub(id, 1, #PARKED) == PARKED then
      offset = offset + 1 -- a key waiting out its rate: its list is drained below
    else
      local v = redis.call('HMGET', KEYS[1] .. id, 's', 'k')
      local st, key = v[1], v[2]
      if key == '' then key = nil end
      redis.call('ZREM', KEYS[3], id)
      if st == 'scheduled' or st == 'retrying' then
        -- a retrying or snoozed task holds its key (at the head of its
        -- list, no token out): the key moves on to its next task
        if key and (st == 'retrying' or key_holds(key, id)) then advance_key(key, id, true) end
        delete(id, st)
      end
    end
  end
  flush_counts()
  if #ids < budget then return {deleted, 'l 0 0-0'} end
  return {deleted, 's ' .. offset}
end

if phase == 'l' then
  local level, after = tonumber(a) or 0, b
  if level >= levels then return {0, 'k 0'} end
  local stream = KEYS[2] .. level
  local es = redis.call('XRANGE', stream, '(' .. after, '+', 'COUNT', budget)
  for _, e in ipairs(es) do
    if e[2][1] == 't' then
      local id = e[2][2]
      local st = redis.call('HGET', KEYS[1] .. id, 's')
      if st == 'pending' then
        redis.call('XACK', stream, GROUP, e[1])
        redis.call('XDEL', stream, e[1])
        delete(id, st)
      end
    end
    after = e[1]
  end
  flush_counts()
  if #es < budget then
    if level + 1 >= levels then return {deleted, 'k 0'} end
    return {deleted, 'l ' .. (level + 1) .. ' 0-0'}
  end
  return {deleted, 'l ' .. level .. ' ' .. after}
end

-- phase 'k': the pending tasks of each key's list; the head stays when it
-- runs or waits out a retry (it holds the key), the rest go.
local r = redis.call('SSCAN', KEYS[9], a, 'COUNT', budget)
for _, key in ipairs(r[2]) do
  local lk = KEYS[8] .. key
  local ids = redis.call('LRANGE', lk, 0, -1)
  for i, id in ipairs(ids) do
    local st = redis.call('HGET', KEYS[1] .. id, 's')
    if st == 'pending' then
      redis.call('LREM', lk, 1, id)
      delete(id, st)
    elseif i > 1 and not st then
      redis.call('LREM', lk, 1, id) -- its hash is gone
    end
  end
end
flush_counts()
if r[1] == '0' then return {deleted, ''} end
return {deleted, 'k ' .. r[1]}
