-- cron: record that a cron schedule's tick was enqueued, fenced by the
-- leader term, and count the schedule's ticks (this script does not use
-- common.lua's KEYS).
--
-- KEYS[1]  the queue's cron hash (field = schedule, value =
--          "tick:term:count"; records written before counts were kept hold
--          "tick:term", read as a count of 0)
-- ARGV[1]  schedule name
-- ARGV[2]  tick, Unix ms
-- ARGV[3]  leader term of the caller
--
-- Returns the schedule's count of ticks, this one included, when recorded;
-- 0 when this tick or a later one was recorded already; -1 when a later
-- leader term recorded a tick (the caller is no longer the leader and must
-- stop).
local count = 0
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v then
  local t, term, n = string.match(v, '^(%d+):(%d+):?(%d*)$')
  if t then
    if tonumber(term) > tonumber(ARGV[3]) then return -1 end
    if tonumber(t) >= tonumber(ARGV[2]) then return 0 end
    count = tonumber(n) or 0
  end
end
count = count + 1
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ':' .. ARGV[3] .. ':' .. string.format('%d', count))
return count
