-- delete: remove finished or dead tasks now, instead of at the end of their
-- retention or dead age: the hash, its place in the retention index or the
-- dead set, a webhook delivery still due, its updates and its log.
--
-- KEYS     the queue's keys (see common.lua), then
--          KEYS[17] progress and partial results prefix (+ task ID)
--          KEYS[18] log prefix (+ task ID)
--          for "id": KEYS[19..21] the task's hash, updates and log (the
--          dead tasks "dead" deletes are read from the dead set: their keys
--          are the prefixes completed here)
-- ARGV[1]  "id": ARGV[2] is the task ID; "dead": ARGV[2] is how many of
--          the oldest dead tasks to delete at most
--
-- Returns, for "id", the state the task was in ("" when missing); a task
-- that has not ended (pending, scheduled, active, retrying) is left alone.
-- For "dead", {deleted, looked at}: fewer looked at than asked means
-- none is left.
local CODES = {succeeded = 'S', failed = 'F', cancelled = 'C'}

local function remove(id, st, h, upd, log)
  if st == 'dead' then
    redis.call('ZREM', KEYS[4], id)
  else
    redis.call('ZREM', KEYS[5], CODES[st] .. '|' .. id)
  end
  redis.call('ZREM', KEYS[12], id)
  redis.call('DEL', h, upd, log)
  count(st, nil)
  event(id, 'deleted', st)
end

if ARGV[1] == 'dead' then
  local ids = redis.call('ZRANGE', KEYS[4], 0, tonumber(ARGV[2]) - 1)
  local n = 0
  for _, id in ipairs(ids) do
    local st = redis.call('HGET', KEYS[1] .. id, 's')
    if st == 'dead' then
      remove(id, st, KEYS[1] .. id, KEYS[17] .. id, KEYS[18] .. id)
      n = n + 1
    else
      redis.call('ZREM', KEYS[4], id) -- its hash is gone (or requeued meanwhile)
    end
  end
  flush_counts()
  return {n, #ids}
end

local id = ARGV[2]
local st = redis.call('HGET', KEYS[19], 's')
if not st then return '' end
if is_final(st) then
  remove(id, st, KEYS[19], KEYS[20], KEYS[21])
  flush_counts()
end
return st
