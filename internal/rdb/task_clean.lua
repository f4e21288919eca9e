-- clean: delete ended tasks of one state that finished before a time, at
-- most ARGV[4] looked at per call (delete.lua's removal, by age).
--
-- KEYS     the queue's keys (see common.lua), then
--          KEYS[17] progress and partial results prefix (+ task ID)
--          KEYS[18] log prefix (+ task ID)
-- ARGV[1]  state: "succeeded", "failed", "cancelled" or "dead"
-- ARGV[2]  finished at or before this Unix ms
-- ARGV[3]  where the last call left off: members of the index kept so far
-- ARGV[4]  at most this many members looked at
--
-- Returns {deleted, next}: next is -1 once the index was walked. Dead tasks
-- are read from the dead set (by time of death: the walk stops at the
-- first later one); the others from the retention index (by end of
-- retention), their finish time read from each hash.
local CODES = {succeeded = 'S', failed = 'F', cancelled = 'C'}
local state, before = ARGV[1], tonumber(ARGV[2])
local offset, budget = tonumber(ARGV[3]), tonumber(ARGV[4])
local deleted = 0

local function remove(id, member, index)
  redis.call('ZREM', index, member)
  redis.call('ZREM', KEYS[12], id)
  redis.call('DEL', KEYS[1] .. id, KEYS[17] .. id, KEYS[18] .. id)
  count(state, nil)
  event(id, 'deleted', state)
  deleted = deleted + 1
end

if state == 'dead' then
  local ids = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', before, 'LIMIT', 0, budget)
  for _, id in ipairs(ids) do
    if redis.call('HGET', KEYS[1] .. id, 's') == 'dead' then
      remove(id, id, KEYS[4])
    else
      redis.call('ZREM', KEYS[4], id) -- its hash is gone (or requeued meanwhile)
    end
  end
  flush_counts()
  if #ids < budget then return {deleted, -1} end
  return {deleted, 0}
end

local code = CODES[state]
if not code then return redis.error_reply('ERR clean: unknown state ' .. state) end
local members = redis.call('ZRANGE', KEYS[5], offset, offset + budget - 1)
for _, m in ipairs(members) do
  local id = string.sub(m, 3)
  local keep = true
  if string.sub(m, 1, 1) == code then
    local v = redis.call('HMGET', KEYS[1] .. id, 's', 'f')
    if v[1] == state and tonumber(v[2] or '') and tonumber(v[2]) <= before then
      remove(id, m, KEYS[5])
      keep = false
    end
  end
  if keep then offset = offset + 1 end
end
flush_counts()
if #members < budget then return {deleted, -1} end
return {deleted, offset}
