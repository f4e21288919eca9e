-- flow_revive: make flow node tasks cancelled by their flow's failure
-- waiting again, the flow having resumed (cancelled -> waiting; only a
-- cancelled task moves, so running the call twice revives nothing twice).
--
-- KEYS     the queue's keys (see common.lua), then KEYS[17..16+n]: the
--          hashes of the n tasks of ARGV, in their order
-- ARGV[1]  the flow's generation, kept in the task (field 'fg')
-- ARGV[2..] the task IDs
--
-- Returns the number of tasks revived.
local made = 0
local gen = ARGV[1]
for i = 2, #ARGV do
  local id, h = ARGV[i], KEYS[15 + i]
  redis.call('HSET', h, 'fg', gen)
  if redis.call('HGET', h, 's') == 'cancelled' then
    redis.call('HSET', h, 's', 'waiting', 'a', '0')
    redis.call('HDEL', h, 'f', 'err', 'c', 'w', 'st', 'res')
    redis.call('PERSIST', h)
    redis.call('ZREM', KEYS[5], 'C|' .. id)
    count('cancelled', 'waiting')
    event(id, 'waiting', 'cancelled', '0')
    made = made + 1
  end
end
flush_counts()
return made
