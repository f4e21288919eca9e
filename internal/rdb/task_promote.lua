-- promote: move due delayed and retrying tasks to the ready streams.
--
-- KEYS     the queue's keys (see common.lua)
-- ARGV[1]  at most this many tasks
--
-- Returns {moved, next due ms or -1, server time ms}.
local now = now_ms()

-- unpark gives a key whose rate window ended its token back; with KN > 1,
-- a token per pending task of its window (each of its tokens that met the
-- limit was dropped, and the key parked once).
local function unpark(key)
  if key_conc() == 1 then
    token(key)
    return
  end
  local given = 0
  for _, t in ipairs(redis.call('LRANGE', KEYS[8] .. key, 0, KN - 1)) do
    if redis.call('HGET', KEYS[1] .. t, 's') == 'pending' then
      token(key)
      given = given + 1
    end
  end
  if given == 0 and redis.call('LLEN', KEYS[8] .. key) > 0 then token(key) end
end
local ids = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
for _, id in ipairs(ids) do
  redis.call('ZREM', KEYS[3], id)
  if string.sub(id, 1, #PARKED) == PARKED then
    unpark(string.sub(id, #PARKED + 1)) -- a key's rate window ended
  else
  local h = KEYS[1] .. id
  local v = redis.call('HMGET', h, 's', 'l', 'k')
  local st, key = v[1], v[3]
  if key == '' then key = nil end
  if st == 'scheduled' or st == 'retrying' then
    redis.call('HSET', h, 's', 'pending')
    count(st, 'pending')
    event(id, 'pending', st, nil, nil, h)
    if not key then
      push_ready(id, v[2])
    elseif st == 'scheduled' and not key_holds(key, id) then
      enqueue_keyed(id, key) -- a delayed task joins its key's list
    else
      -- a retrying or snoozed task stayed at the head of its key's list (a
      -- delayed one is in the list only once promoted)
      token(key)
    end
  end
  end
end
local next = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
local due = -1
if next[2] then due = tonumber(next[2]) end
flush_counts()
return {#ids, due, now}
