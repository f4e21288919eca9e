-- fetch: take ready tasks for a worker and mark them active, in one step.
--
-- KEYS     the queue's keys (see common.lua), then
--   KEYS[17] this call's memo (KEYS[14] .. consumer .. ':' .. the call's slot)
--   KEYS[18] the consumer's own-call cursor (KEYS[14] .. consumer .. ':own')
-- ARGV[1]  consumer (the worker)
-- ARGV[2]  per-key rate limit: tasks per window (0 = none; keyed queues)
-- ARGV[3]  rate window ms
-- ARGV[4]  mode: "read", "given" or "own"
-- ARGV[5]  call ID (read and own: rdb.NewCallIn, the call's slot, a
--          dot and a random value; given: "")
-- ARGV[6]  queue rate limit: tasks taken per window, over all workers
--          (0 = none), counted in KEYS[16] (fixed windows from the first);
--          the live setting (field "rate" of KEYS[15]: "N WINDOW_MS", set
--          with Queue.SetRate; "0 0" is no limit) takes its place
-- ARGV[7]  its window ms
-- The live settings' field "global" caps the tasks active over all workers
-- (the counts' "active"): a call takes at most what it leaves, and with
-- nothing left fails with "FULL" (and sets the field "gwait", so that the
-- next worker to finish a task wakes the fetchers: WakeGlobalWaiters).
-- read:    ARGV[8] number of levels n, ARGV[9..8+n] quota per level,
--          ARGV[9+n] total: levels are read up to their quota in order, then
--          the rest is filled from the levels in order (strict priority =
--          the whole total as the first level's quota)
-- given:   groups of level, entry ID, field ("t" or "k"), value, of entries
--          the worker read with a blocking XREADGROUP
-- own:     ARGV[8] number of levels, ARGV[9] most tasks to take: the
--          entries pending with this worker whose tasks it never took (a
--          blocking read whose reply was lost), from its pending history,
--          each level from where the worker's last own call left off
--          (KEYS[18], kept a minute; see own)
--
-- While the queue is paused (field "paused" of KEYS[15]) a call takes no
-- task: it fails with an error starting "PAUSED", but for tasks it hands
-- out again (taken by an earlier run of the same call, whose reply was
-- lost). Entries a blocking read gave meanwhile are left pending with the
-- consumer, whose "own" call takes them once the queue is resumed. Under a
-- queue rate limit a call takes at most what is left of the window's
-- budget; with none left it fails with "RATE <ms to the window's end>",
-- and entries a blocking read gave beyond the budget are left pending as
-- well.
--
-- Returns {level, entry ID, task ID, payload, attempts, max retries,
-- timeout ms, key, enqueued ms, headers ("" = none)} per task taken, the
-- numbers as the hash holds them (decimal text: converting them to Lua
-- numbers and back cost 3% of a task's fetch), but attempts, a number
-- when counted here. Entries whose task is no
-- longer pending (cancelled, gone) are acknowledged and deleted, but for
-- one that this consumer took with this very entry: a call run again after
-- its reply was lost hands it out again. A read or own call that took
-- tasks notes them under the worker's name and the call's slot with its ID
-- (KEYS[17], kept a minute): the same call run again (sent again by the
-- worker after an error) hands out those tasks again instead of reading new
-- ones; the slot's next call replaces or deletes the memo. A key
-- over its rate limit is parked in the scheduled set until its window ends
-- (its token is deleted; promote.lua gives it a new one).
local consumer = ARGV[1]
local rate, window = tonumber(ARGV[2]), tonumber(ARGV[3])
local mode, call = ARGV[4], ARGV[5]
local qrate, qwindow = tonumber(ARGV[6]), tonumber(ARGV[7])
-- a read call's memo: per worker and slot (the call ID's digits before its
-- dot; see rdb.NewCallIn), so that a call of another slot under way at
-- once neither replaces nor deletes it
local memo = KEYS[17]
local now = now_ms()
local now_text = tostring(now)
local live = redis.call('HMGET', KEYS[15], 'paused', 'rate', 'global')
local paused = live[1] ~= false
if live[2] then
  local n, w = string.match(live[2], '^(%d+) (%d+)$')
  if n then qrate, qwindow = tonumber(n), tonumber(w) end
end
-- budget: tasks the queue's rate and global concurrency leave this call
-- (nil: no limit); spent counts the tasks taken anew, added to the
-- window's count at the end
local budget, spent = nil, 0
if qrate > 0 then budget = qrate - tonumber(redis.call('GET', KEYS[16]) or '0') end
-- full: the queue runs as many tasks as its global concurrency (field
-- "global") allows, counted by the queue's active count
local full = false
local global = tonumber(live[3] or '')
if global and global >= 1 then
  local free = global - tonumber(redis.call('HGET', KEYS[6], 'active') or '0')
  if not budget or free < budget then budget = free end
  full = free <= 0
end
-- kept: entries given to this consumer and left pending (paused, or over
-- the budget)
local kept = 0
-- held_back: the queue is paused or has no budget left (its rate's or its
-- global concurrency's); refuse returns the error that says which.
local function held_back() return paused or (budget and budget <= 0) end
local function refuse()
  if paused then return redis.error_reply('PAUSED the queue is paused') end
  if full then
    -- a worker that finishes a task wakes the fetchers refused here
    redis.call('HSET', KEYS[15], 'gwait', '1')
    return redis.error_reply('FULL the queue runs its global concurrency')
  end
  local ttl = redis.call('PTTL', KEYS[16])
  if ttl < 0 then ttl = qwindow end
  return redis.error_reply('RATE ' .. ttl)
end
local out = {}
-- the entries of the tasks in out: level, entry ID, field, value
local taken = {}

-- drop acknowledges and deletes the entry of a task not taken.
local function drop(level, eid)
  local stream = KEYS[2] .. level
  redis.call('XACK', stream, GROUP, eid)
  redis.call('XDEL', stream, eid)
end

-- window_task returns the task a token eid of key takes with KN > 1: the
-- task of the key's window taken with this very entry (a call run again
-- after its reply was lost), else its first pending task; nil when none
-- (every task of the window is in progress: the token is dropped). Tasks
-- of the window that ended or are gone leave the list on the way.
local function window_task(key, eid)
  local lk = KEYS[8] .. key
  while true do
    local first, ended = nil, nil
    for _, t in ipairs(redis.call('LRANGE', lk, 0, KN - 1)) do
      local m = redis.call('HMGET', KEYS[1] .. t, 's', 'x')
      if m[1] == 'active' and m[2] == eid then return t end
      if m[1] == 'pending' then
        first = first or t
      elseif not m[1] or is_final(m[1]) then
        ended = t
        break
      end
    end
    if not ended then return first end
    -- a pending task deleted in line held a token, which covers the task
    -- entering the window
    advance_key(key, ended, false)
  end
end

local function take(level, eid, field, value)
  level = tostring(level) -- as the hash holds it (a string stays as it is)
  local id, key = value, nil
  if field == 'k' then
    key = value
    if key_conc() > 1 then
      id = window_task(key, eid)
      if not id then
        drop(level, eid)
        if redis.call('LLEN', KEYS[8] .. key) == 0 then redis.call('SREM', KEYS[9], key) end
        return
      end
    else
    id = redis.call('LINDEX', KEYS[8] .. key, 0)
    if not id then
      drop(level, eid)
      redis.call('SREM', KEYS[9], key)
      return
    end
    end
  end
  local h = KEYS[1] .. id
  local v = redis.call('HMGET', h, 's', 'p', 'a', 'r', 'to', 'e', 'c', 'h')
  if v[1] == 'active' then
    local m = redis.call('HMGET', h, 'x', 'l', 'w')
    if m[1] == eid and m[2] == level and m[3] == consumer then
      -- Taken by an earlier run of this very call, whose reply was lost (a
      -- client sends a call again when its reply breaks off or times out):
      -- handed out again as it was taken then. Nothing else hands this
      -- consumer an entry its task is already active on.
      table.insert(out, {level, eid, id, v[2], v[3], v[4], v[5], key or '', v[6], v[8] or ''})
      table.insert(taken, {level, eid, field, value})
      return
    end
  end
  if paused or (budget and spent >= budget and v[1] == 'pending') then
    kept = kept + 1 -- left pending with this consumer (see above)
    return
  end
  if key and rate > 0 and v[1] == 'pending' then
    local rk = KEYS[11] .. key
    local used = redis.call('INCR', rk)
    if used == 1 then redis.call('PEXPIRE', rk, window) end
    if used > rate then
      local ttl = redis.call('PTTL', rk)
      if ttl < 0 then ttl = window; redis.call('PEXPIRE', rk, window) end
      drop(level, eid)
      redis.call('ZADD', KEYS[3], now + ttl, PARKED .. key)
      wake_if_first(PARKED .. key)
      return
    end
  end
  if v[1] ~= 'pending' then
    drop(level, eid)
    if key and (not v[1] or is_final(v[1])) then advance_key(key, id, true) end
    return
  end
  local a = tonumber(v[3]) + 1
  local a_text = string.format('%d', a) -- not formatted with %.14g by redis.call
  redis.call('HSET', h, 's', 'active', 'a', a_text, 'st', now_text, 'w', consumer, 'x', eid, 'l', level)
  if v[7] then redis.call('HDEL', h, 'c') end
  count('pending', 'active')
  event(id, 'active', 'pending', a_text)
  spent = spent + 1
  table.insert(out, {level, eid, id, v[2], a, v[4], v[5], key or '', v[6], v[8] or ''})
  table.insert(taken, {level, eid, field, value})
end

local function read(level, n)
  if n <= 0 then return 0 end
  level = tostring(level) -- once, not per task
  local r = redis.call('XREADGROUP', 'GROUP', GROUP, consumer, 'COUNT', string.format('%d', n), 'STREAMS', KEYS[2] .. level, '>')
  if not r then return 0 end
  local got = 0
  for _, e in ipairs(r[1][2]) do
    take(level, e[1], e[2][1], e[2][2])
    got = got + 1
  end
  return got
end

-- own takes, from this consumer's pending entries of level after from, up
-- to n tasks still pending; entries of tasks active here (running, or taken
-- by a call whose reply was lost: that call is sent again) are left alone.
-- It returns how many it took and the last entry it is done with: the next
-- own call starts after it, so that a worker's pending entries (its
-- running tasks: up to its concurrency) are walked once, not by every call
-- of a recovery that a rate limit spreads over many calls. An entry before
-- it needs no second look: its task was taken here, or was active, and
-- leaves this pending list when it ends (finish.lua acknowledges it) or is
-- reclaimed; the entries a recovery is for (a blocking read's) are newer
-- than any entry walked before, so they come after it. An entry whose task
-- is left pending (kept) ends the walk before it.
local function own(level, n, from)
  level = tostring(level)
  local got = 0
  while got < n do
    local r = redis.call('XREADGROUP', 'GROUP', GROUP, consumer, 'COUNT', 100, 'STREAMS', KEYS[2] .. level, from)
    local es = r and r[1][2] or {}
    if #es == 0 then break end
    for _, e in ipairs(es) do
      local f, value = e[2][1], e[2][2]
      local id = value
      if f == 'k' then id = key_task(value, e[1]) end
      if not id or redis.call('HGET', KEYS[1] .. id, 's') ~= 'active' then
        local before, held = #out, kept
        take(level, e[1], f, value)
        if kept > held then return got, from end
        got = got + #out - before
      end
      from = e[1]
      if got >= n then break end
    end
  end
  return got, from
end

if mode == 'read' or mode == 'own' then
  -- the memo is the call ID, a space, then the entries taken as JSON: a
  -- memo of another call is told by its start, without decoding it
  local m = redis.call('GET', memo)
  if m and string.sub(m, 1, #call + 1) == call .. ' ' then
    for _, e in ipairs(cjson.decode(string.sub(m, #call + 2))) do take(e[1], e[2], e[3], e[4]) end
    flush_counts()
    return out
  end
  if held_back() then
    if m then redis.call('DEL', memo) end
    return refuse()
  end
  if mode == 'read' then
    local n = tonumber(ARGV[8])
    local left = tonumber(ARGV[9 + n])
    if budget then left = math.min(left, budget) end
    -- a level that gave fewer than its quota has nothing more ready (but a
    -- key's token added meanwhile): the second pass does not read it again
    local drained = {}
    for l = 0, n - 1 do
      local want, tokens = math.min(tonumber(ARGV[9 + l]), left), TOKENS
      local got = read(l, want)
      drained[l] = got < want and TOKENS == tokens
      left = left - got
    end
    for l = 0, n - 1 do
      if left <= 0 then break end
      if not drained[l] then left = left - read(l, left) end
    end
  else
    local levels, left = tonumber(ARGV[8]), tonumber(ARGV[9])
    if budget then left = math.min(left, budget) end
    -- where the last own call left off, per level ("0": the start)
    local cursor, from = KEYS[18], {}
    for id in string.gmatch(redis.call('GET', cursor) or '', '%S+') do table.insert(from, id) end
    for l = 1, levels do from[l] = from[l] or '0' end
    for l = 0, levels - 1 do
      if left <= 0 then break end
      local got
      got, from[l + 1] = own(l, left, from[l + 1])
      left = left - got
    end
    redis.call('SET', cursor, table.concat(from, ' ', 1, levels), 'PX', 60000)
  end
  if #taken > 0 then
    redis.call('SET', memo, call .. ' ' .. cjson.encode(taken), 'PX', 60000)
  elseif m then
    redis.call('DEL', memo)
  end
else
  for i = 8, #ARGV, 4 do take(ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]) end
  if #out == 0 and kept > 0 then
    flush_counts()
    return refuse()
  end
end
if spent > 0 and qrate > 0 then
  if redis.call('INCRBY', KEYS[16], spent) == spent then redis.call('PEXPIRE', KEYS[16], qwindow) end
end
flush_counts()
return out
