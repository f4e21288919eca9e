-- set_group: create a processor's consumer group on a partition stream (and
-- the stream when missing), or move an existing one, with its entries-read
-- counter set to the number of entries up to the position. Without it Redis
-- leaves the counter unknown after XGROUP CREATE ... $ or XGROUP SETID, and
-- the trim check could not tell entries skipped on purpose from entries
-- trimmed before the group read them. On a server without the counter
-- (before Redis 7) the group is created or moved without it.
--
-- KEYS[1]  partition stream
-- ARGV[1]  consumer group (the processor)
-- ARGV[2]  position: "0" (before the oldest entry), "$" (after the last
--          entry) or an entry ID (the group goes on after it)
-- ARGV[3]  "create" to leave an existing group alone, "move" to move it
--
-- Returns 1 when the group was created, 0 when it existed and was left
-- alone, 2 when it was moved.
local key, group, pos = KEYS[1], ARGV[1], ARGV[2]

-- ids compare as {ms, seq}; "5" means 5-0.
local function parse(id)
  local ms, seq = string.match(id, '^(%d+)-?(%d*)$')
  return tonumber(ms), tonumber(seq) or 0
end
local function less(a, b)
  local am, as = parse(a)
  local bm, bs = parse(b)
  return am < bm or (am == bm and as < bs)
end

-- read: entries up to the position, or nil when the server has no counter.
local read = 0
if redis.call('EXISTS', key) == 1 then
  local info = redis.call('XINFO', 'STREAM', key)
  local added, length
  for i = 1, #info, 2 do
    if info[i] == 'entries-added' then added = info[i + 1] end
    if info[i] == 'length' then length = info[i + 1] end
  end
  read = nil
  if added then
    local first = redis.call('XRANGE', key, '-', '+', 'COUNT', 1)[1]
    local last = redis.call('XREVRANGE', key, '+', '-', 'COUNT', 1)[1]
    if pos == '$' or length == 0 or not less(pos, last[1]) then
      read = added
    elseif pos == '0' or pos == '0-0' or less(pos, first[1]) then
      read = added - length
    else
      -- Entries after the position, counted in pages.
      local after, from = 0, '(' .. pos
      while true do
        local page = redis.call('XRANGE', key, from, '+', 'COUNT', 1000)
        after = after + #page
        if #page < 1000 then break end
        from = '(' .. page[#page][1]
      end
      read = added - after
    end
  end
end

-- run runs an XGROUP command with ENTRIESREAD when the counter is known;
-- a server that does not take the argument (an older one, or a protocol
-- look-alike) gets the command without it, and the counter stays unknown.
local function run(args)
  if read then
    local with = {unpack(args)}
    table.insert(with, 'ENTRIESREAD')
    table.insert(with, read)
    local r = redis.pcall(unpack(with))
    if not (type(r) == 'table' and r.err and (string.find(r.err, 'wrong number of arguments', 1, true) or string.find(r.err, 'syntax error', 1, true))) then
      return r
    end
  end
  return redis.pcall(unpack(args))
end

local ok = run({'XGROUP', 'CREATE', key, group, pos, 'MKSTREAM'})
if type(ok) == 'table' and ok.err then
  if string.sub(ok.err, 1, 9) ~= 'BUSYGROUP' then
    return ok
  end
  if ARGV[3] ~= 'move' then
    return 0
  end
  local r = run({'XGROUP', 'SETID', key, group, pos})
  if type(r) == 'table' and r.err then
    return r
  end
  return 2
end
return 1
