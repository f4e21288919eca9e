-- flow_nodes: create a flow's node tasks in one queue, waiting (invisible
-- to workers, counted as "waiting") until their flow releases them.
-- A task that exists already is left as it is: a submission finished by
-- another process creates nothing twice.
--
-- KEYS     the queue's keys (see common.lua), then KEYS[17..16+n]: the
--          hashes of the n tasks of ARGV, in their order
-- ARGV[1]  number of tasks n, then 10 values per task: id, payload, level,
--          max retries, timeout ms, retention ms, task key ("" = unkeyed),
--          webhook URL, webhook secret, headers ("" = none for the last 3)
--
-- Returns the number of tasks created.
local n = tonumber(ARGV[1])
local now = tostring(now_ms())
local made = 0
for i = 0, n - 1 do
  local b = 2 + i * 10
  local h = KEYS[17 + i]
  if redis.call('EXISTS', h) == 0 then
    redis.call('HSET', h, 's', 'waiting', 'p', ARGV[b + 1], 'l', ARGV[b + 2], 'a', '0', 'r', ARGV[b + 3],
      'to', ARGV[b + 4], 'ret', ARGV[b + 5], 'u', '', 'k', ARGV[b + 6], 'e', now, 'd', now)
    if ARGV[b + 7] ~= '' then redis.call('HSET', h, 'wh', ARGV[b + 7]) end
    if ARGV[b + 8] ~= '' then redis.call('HSET', h, 'whk', ARGV[b + 8]) end
    if ARGV[b + 9] ~= '' then redis.call('HSET', h, 'h', ARGV[b + 9]) end
    count(nil, 'waiting')
    event(ARGV[b], 'waiting', nil, '0')
    made = made + 1
  end
end
flush_counts()
return made
