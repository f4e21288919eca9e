-- list: tasks of one of the queue's sorted sets, each with its hash, in one
-- atomic read (nothing is written).
--
-- KEYS     the queue's keys (see common.lua)
-- ARGV[1]  "dead" (KEYS[4], the latest death first), "done" (KEYS[5], the
--          latest end of retention first) or "scheduled" (KEYS[3], the
--          soonest due first)
-- ARGV[2]  at most this many tasks
--
-- Returns a flat array: per task, its ID, its score (Unix ms) and its hash
-- as a flat array of fields and values. A member whose hash is gone (its
-- retention ended before the janitor removed it) is left out, as are the
-- keys parked in the scheduled set; at most LOOK members are read in all.
local which, limit = ARGV[1], tonumber(ARGV[2])
local LOOK = 1000
local set, rev = KEYS[4], true
if which == 'done' then
  set = KEYS[5]
elseif which == 'scheduled' then
  set, rev = KEYS[3], false
elseif which ~= 'dead' then
  return redis.error_reply('ERR list: unknown set ' .. tostring(which))
end

local out, found, offset = {}, 0, 0
while found < limit and offset < LOOK do
  local n = math.min(limit - found, LOOK - offset)
  local page
  if rev then
    page = redis.call('ZRANGE', set, '+inf', '-inf', 'BYSCORE', 'REV', 'LIMIT', offset, n, 'WITHSCORES')
  else
    page = redis.call('ZRANGE', set, '-inf', '+inf', 'BYSCORE', 'LIMIT', offset, n, 'WITHSCORES')
  end
  for i = 1, #page, 2 do
    local id = page[i]
    if which == 'done' then id = string.sub(id, 3) end
    if string.sub(id, 1, #PARKED) ~= PARKED then
      local h = redis.call('HGETALL', KEYS[1] .. id)
      if #h > 0 then
        out[#out + 1] = id
        out[#out + 1] = page[i + 1]
        out[#out + 1] = h
        found = found + 1
      end
    end
  end
  if #page < 2 * n then break end
  offset = offset + n
end
return out
