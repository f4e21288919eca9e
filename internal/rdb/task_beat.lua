-- beat: note that a worker runs a queue, at the server's time.
--
-- KEYS[1]  the queue's workers (sorted set: worker -> last beat ms)
-- ARGV[1]  worker
-- ARGV[2]  forget ms: a worker's first beat drops the members silent
--          for longer (workers that died), which bounds the set
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if redis.call('ZADD', KEYS[1], now, ARGV[1]) == 1 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. (now - tonumber(ARGV[2])))
end
return now
