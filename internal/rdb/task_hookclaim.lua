-- hookclaim.lua: takes the due webhook deliveries of a queue, pushing each
-- taken a lease ahead so that no other worker takes it meanwhile.
--
-- KEYS[1] the queue's webhook set (keys.Space.TaskWebhooks): task IDs
--         scored by the Unix ms their next attempt is due
-- ARGV[1] now, Unix ms
-- ARGV[2] lease, ms
-- ARGV[3] the most deliveries to take
--
-- Returns {ids taken, score of the earliest delivery left or ''}.
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
for _, id in ipairs(ids) do redis.call('ZADD', KEYS[1], tonumber(ARGV[1]) + tonumber(ARGV[2]), id) end
local next = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {ids, next[2] or ''}
