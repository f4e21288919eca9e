-- delete_consumers: delete consumers of a group that have nothing pending.
-- The check and the deletion are one atomic step, so no pending entry is
-- ever lost with its consumer (XGROUP DELCONSUMER drops a consumer's pending
-- entries); a consumer deleted this way is created again by its next read.
--
-- KEYS[1]  partition stream
-- ARGV[1]  consumer group (the processor)
-- ARGV[2..] consumers (executor IDs)
--
-- Returns the number of consumers deleted (0 when the stream or the group
-- is missing).
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
local info = redis.pcall('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])
if type(info) == 'table' and info.err then
  return 0 -- no such group
end
local pending = {}
for _, c in ipairs(info) do
  local name, n
  for i = 1, #c, 2 do
    if c[i] == 'name' then name = c[i + 1] end
    if c[i] == 'pending' then n = c[i + 1] end
  end
  if name then pending[name] = n end
end
local deleted = 0
for i = 2, #ARGV do
  if pending[ARGV[i]] == 0 then
    redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[i])
    deleted = deleted + 1
  end
end
return deleted
