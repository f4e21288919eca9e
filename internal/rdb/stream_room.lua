-- stream_room: what a partition stream's consumer groups have still to
-- process, for the writes that must not trim it away. Put before
-- guarded_add.lua and output_commit.lua.

-- unprocessed returns the most entries a consumer group of stream key has
-- to go: its unread entries (lag) and its pending ones. A group whose lag
-- Redis does not know counts the whole stream as unread.
local function unprocessed(key)
  local worst = 0
  if redis.call('EXISTS', key) == 1 then
    local len = redis.call('XLEN', key)
    for _, g in ipairs(redis.call('XINFO', 'GROUPS', key)) do
      local lag, pending = nil, 0
      for i = 1, #g, 2 do
        if g[i] == 'lag' then lag = g[i + 1] end
        if g[i] == 'pending' then pending = g[i + 1] end
      end
      if type(lag) ~= 'number' then lag = len end
      if lag + pending > worst then worst = lag + pending end
    end
  end
  return worst
end
