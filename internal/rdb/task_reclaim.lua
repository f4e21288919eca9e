-- reclaim: make ready again the tasks whose entries stayed unacknowledged
-- longer than the visibility timeout (their worker died or froze).
--
-- KEYS     the queue's keys (see common.lua)
-- ARGV[1]  reclaiming consumer name
-- ARGV[2]  minimum idle time ms (the visibility timeout)
-- ARGV[3]  at most this many entries
-- ARGV[4]  level
-- ARGV[5]  XAUTOCLAIM cursor ("0-0" to start)
-- ARGV[6]  dead set bound (count)
-- ARGV[7]  dead age ms
--
-- A task whose attempts reached its maximum becomes dead, so a task that
-- kills its workers cannot loop forever. Returns {next cursor, reclaimed,
-- buried}.
local level = ARGV[4]
local stream = KEYS[2] .. level
local r = redis.call('XAUTOCLAIM', stream, GROUP, ARGV[1], tonumber(ARGV[2]), ARGV[5], 'COUNT', tonumber(ARGV[3]))
local now = now_ms()
local reclaimed, buried = 0, 0
for _, e in ipairs(r[2]) do
  local eid, f = e[1], e[2]
  redis.call('XACK', stream, GROUP, eid)
  redis.call('XDEL', stream, eid)
  if f and f[1] then
    local id, key = f[2], nil
    if f[1] == 'k' then
      key = f[2]
      id = key_task(key, eid)
    end
    if id then
      local h = KEYS[1] .. id
      local v = redis.call('HMGET', h, 's', 'a', 'r')
      local st = v[1]
      if st == 'active' or st == 'pending' then
        if st == 'active' and tonumber(v[2]) > tonumber(v[3]) then
          redis.call('HSET', h, 'err', 'worker lost while running the last attempt')
          count(st, 'dead')
          event(id, 'dead', st, v[2], 'worker lost while running the last attempt')
          bury(h, id, now, tonumber(ARGV[6]), tonumber(ARGV[7]))
          if key then advance_key(key, id, true) end
          buried = buried + 1
        else
          redis.call('HSET', h, 's', 'pending')
          count(st, 'pending')
          if st ~= 'pending' then event(id, 'pending', st, v[2]) end
          if key then token(key) else push_ready(id, level) end
          reclaimed = reclaimed + 1
        end
      elseif key then
        if not st or is_final(st) then advance_key(key, id, true) else token(key) end
      end
    elseif key and key_conc() > 1 and redis.call('LLEN', KEYS[8] .. key) > 0 then
      token(key) -- a token no task was taken for: it goes back
    elseif key then
      redis.call('SREM', KEYS[9], key)
    end
  end
end
flush_counts()
return {r[1], reclaimed, buried}
