-- list: tasks of one of the queue's sorted sets, each with some fields of
-- its hash, in one atomic read (nothing is written). Only the fields asked
-- for are read (HMGET), never the payload or result unless asked: a
-- listing's cost does not grow with the tasks' sizes.
--
-- KEYS     the queue's keys (see common.lua)
-- ARGV[1]  "dead" (KEYS[4], the latest death first), "done" (KEYS[5], the
--          latest end of retention first) or "scheduled" (KEYS[3], the
--          soonest due first)
-- ARGV[2]  at most this many tasks
-- ARGV[3]  the error field ('err') is cut to this many bytes
-- ARGV[4]  and on: the hash fields to read, the state ('s') first
--
-- Returns a flat array: per task, its ID, its score (Unix ms) and the
-- values of the fields asked for, in their order (false where absent). A
-- member whose hash is gone (its retention ended before the janitor removed
-- it) is left out, as are the keys parked in the scheduled set; at most
-- LOOK members are read in all.
local which, limit, errmax = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local fields, errat = {}, nil
for i = 4, #ARGV do
  fields[#fields + 1] = ARGV[i]
  if ARGV[i] == 'err' then errat = #fields end
end
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
      local h = redis.call('HMGET', KEYS[1] .. id, unpack(fields))
      if h[1] then
        if errat and h[errat] and #h[errat] > errmax then
          h[errat] = string.sub(h[errat], 1, errmax)
        end
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
