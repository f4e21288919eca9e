-- common: helpers prepended to every task script (not a script itself).
--
-- Every task script takes the same KEYS, all in the queue's hash slot:
--   KEYS[1]  task hash prefix (+ task ID)
--   KEYS[2]  ready stream prefix (+ priority level)
--   KEYS[3]  scheduled set (delayed and retrying tasks by due time)
--   KEYS[4]  dead set (by time of death)
--   KEYS[5]  done set (retained finished tasks by end of retention)
--   KEYS[6]  counts per state (hash)
--   KEYS[7]  unique lock prefix (+ unique key)
--   KEYS[8]  key list prefix (+ task key; keyed queues)
--   KEYS[9]  set of keys with tasks waiting or running (keyed queues)
--   KEYS[10] wake list of the queue's leader
--   KEYS[11] per-key rate counter prefix (+ task key; keyed queues)
--   KEYS[12] pending webhook deliveries (task IDs by due time)
--   KEYS[13] finished-task counter prefix (+ 10-second bucket number)
--   KEYS[14] last fetch call prefix (+ worker:slot; fetch.lua takes the
--            keys it writes in KEYS[17] and KEYS[18])
--   KEYS[15] live settings (hash: concurrency, paused, rate, kn)
--   KEYS[16] the queue's rate counter (tasks taken in the current window)
--   KEYS[#KEYS] the queue's events stream, after the script's own keys
--            (see event)
--
-- The prefixes (KEYS[1], 2, 7, 8, 11, 13) are completed inside the
-- scripts, all in the queue's hash slot, because most of those keys only
-- the script learns as it runs. Task hashes (KEYS[1] .. id): the IDs are
-- read from the ready streams (fetch), the scheduled set (promote),
-- XAUTOCLAIM (reclaim), the retention index (janitor), the dead set (bury
-- drops the oldest), the oldest pending entry (trim) and the index a
-- listing ranges over (task_list.lua). Ready streams (KEYS[2] .. level):
-- the level is a field of the task's hash. Unique locks (KEYS[7] .. u),
-- key lists (KEYS[8] .. key) and per-key rate counters (KEYS[11] .. key):
-- the unique key and the task key are fields of the task's hash or of a
-- key's token entry. Finished-task counters (KEYS[13] .. bucket): the
-- bucket is the server's time in the script (TIME), one clock for every
-- worker. What a caller can name comes after these KEYS: the hashes of the
-- tasks finish.lua, cancel.lua and requeue.lua are given, fetch.lua's
-- memo and own-call cursor (KEYS[14] .. consumer ..), delete.lua's task
-- by ID (its hash, updates and log). Enqueue
-- names its new tasks' hashes in ARGV: Redis checks every key of KEYS
-- for read and write access, and a producer's ACL may only read task
-- hashes (and RENAMENX onto them; see task_enqueue.lua).
--
-- Task hash fields: s state, p payload, l level, x ready entry ID, a
-- attempts, r max retries, to timeout ms, ret retention ms, u unique key,
-- k task key, e enqueued ms, d due ms, st started ms, f finished ms, w
-- worker, res result, err last error, c cancel requested, h headers (a
-- JSON object of strings).
local GROUP = 'workers'

-- A member of the scheduled set starting with PARKED is a key of a keyed
-- queue waiting out its rate limit, not a task (task IDs never start
-- with '~').
local PARKED = '~k:'

-- now_ms returns the server's time in ms, read once per call: a script's
-- steps all happen at one time (flush_counts buckets by it too).
local NOW = nil
local function now_ms()
  if not NOW then
    local t = redis.call('TIME')
    NOW = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return NOW
end

-- A Lua number given to redis.call is formatted with "%.17g" at every
-- call (glibc's floating-point printing, about 1,500 instructions): a time
-- written once per task is formatted once per script instead (now_text),
-- and the counts as integers (string.format's '%d').

local function is_final(s)
  return s == 'succeeded' or s == 'failed' or s == 'dead' or s == 'cancelled'
end

-- Tasks reaching a final state are counted per bucket of FINISHED_BUCKET
-- seconds (KEYS[13] .. Unix seconds / FINISHED_BUCKET), each counter kept
-- FINISHED_KEEP ms: enough for the throughput over the last five minutes
-- (rdb.FinishedBucket and rdb.FinishedKeep say the same).
local FINISHED_BUCKET = 10
local FINISHED_KEEP = 330000

-- count records a move between states; flush_counts applies the moves of
-- the whole call to the counts hash, one HINCRBY per state changed, adds
-- the tasks that reached a final state to the current bucket of finished
-- tasks, and adds the tasks finish ended to the retention index with one
-- ZADD. Every script calls it before it returns.
local DELTA = {}
local FINISHED = 0
-- the retention index's members added by finish, score then member: one
-- ZADD per call (flush_counts)
local DONE = {}
-- the retention index's scores, as text (see now_text): the tasks of a
-- call mostly share one
local DONE_AT = {}
local function count(from, to)
  if from then DELTA[from] = (DELTA[from] or 0) - 1 end
  if to then DELTA[to] = (DELTA[to] or 0) + 1 end
  if to and is_final(to) and not (from and is_final(from)) then FINISHED = FINISHED + 1 end
end

-- Queue events (task.Events): while the queue's live settings hold field
-- 'ev' (the events stream's length cap), every move of a task is also an
-- entry of the queue's events stream, written in the same step as the
-- move. The stream is the last key of every task script (enqueue.lua
-- names the settings hash in ARGV: a producer may only read it). An
-- entry: t task ID, s new state (or 'deleted', 'expired' when its hash
-- goes), p previous state, a attempt, e error (ended states, cut to
-- EVENT_ERR bytes); its ID is the time. The setting is read once per call,
-- and only by a call that moves a task.
local EV_KEY, EV_CONF, EV_CAP = KEYS[#KEYS], KEYS[15], nil
local EVENT_ERR = 256
-- attempt is the task's attempt, or nil to read it from its hash h (only
-- while events are on).
local function event(id, to, from, attempt, err, h)
  if EV_CAP == nil then
    EV_CAP = EV_CONF and redis.call('HGET', EV_CONF, 'ev') or false
  end
  if not EV_CAP then return end
  if attempt == nil and h then attempt = redis.call('HGET', h, 'a') end
  local e = {'XADD', EV_KEY, 'MAXLEN', '~', EV_CAP, '*', 't', id, 's', to}
  if from then e[#e + 1] = 'p'; e[#e + 1] = from end
  if attempt then e[#e + 1] = 'a'; e[#e + 1] = attempt end
  if err and err ~= '' then e[#e + 1] = 'e'; e[#e + 1] = string.sub(err, 1, EVENT_ERR) end
  redis.call(unpack(e))
end

local function flush_counts()
  for state, d in pairs(DELTA) do
    if d ~= 0 then redis.call('HINCRBY', KEYS[6], state, string.format('%d', d)) end
  end
  DELTA = {}
  if FINISHED > 0 then
    local fk = KEYS[13] .. string.format('%d', math.floor(now_ms() / (1000 * FINISHED_BUCKET)))
    -- the bucket's first count sets its expiry (an increment never
    -- touches it); a later one finds it set
    if redis.call('INCRBY', fk, string.format('%d', FINISHED)) == FINISHED then
      redis.call('PEXPIRE', fk, FINISHED_KEEP)
    end
    FINISHED = 0
  end
  if #DONE > 0 then
    redis.call('ZADD', KEYS[5], unpack(DONE))
    DONE = {}
  end
end

-- push_ready adds a ready entry for an unkeyed task.
local function push_ready(id, level)
  local x = redis.call('XADD', KEYS[2] .. level, '*', 't', id)
  redis.call('HSET', KEYS[1] .. id, 'x', x, 'l', level)
end

-- token adds a ready entry for a key of a keyed queue (at most one exists);
-- TOKENS counts the tokens the call added.
local TOKENS = 0
local function token(key)
  redis.call('XADD', KEYS[2] .. '0', '*', 'k', key)
  TOKENS = TOKENS + 1
end

-- Key concurrency (keyed queues): up to KN tasks of a key are in progress
-- at once (field "kn" of the live settings, KEYS[15], written when the
-- queue registers; enqueue.lua is given it in ARGV). With KN = 1 a key has
-- at most one token and its first task runs (the code below the KN > 1
-- branches). With KN > 1 the first KN tasks of a key's list are its
-- window: the tasks in progress (active, retrying, snoozed) are always in
-- it, since tasks start in list order and leave the list when they end, so
-- no more than KN run at once whatever the tokens. A token takes the
-- window's first pending task, or is dropped when it has none. A task
-- entering the window gets a token: at enqueue when the list holds at
-- most KN tasks, and when a task in progress leaves the list while KN or
-- more remain (the task at position KN moved in). A token given too many
-- costs a fetch nothing but its drop.
local KN = nil
local function key_conc()
  if not KN then
    KN = math.floor(tonumber(KEYS[15] and redis.call('HGET', KEYS[15], 'kn') or '1') or 1)
    if KN < 1 then KN = 1 end
  end
  return KN
end

-- key_holds reports whether id is in progress in its key's list (KN = 1:
-- at its head; KN > 1: in its window), as a retrying or snoozed task is.
local function key_holds(key, id)
  local n = key_conc()
  if n == 1 then return redis.call('LINDEX', KEYS[8] .. key, 0) == id end
  return redis.call('LPOS', KEYS[8] .. key, id, 'MAXLEN', n) ~= false
end

-- key_task returns the task of key that ready entry eid was taken for
-- (KN = 1: the head of its list; KN > 1: the task of its window whose
-- field x is eid), or nil.
local function key_task(key, eid)
  local n = key_conc()
  if n == 1 then return redis.call('LINDEX', KEYS[8] .. key, 0) or nil end
  for _, id in ipairs(redis.call('LRANGE', KEYS[8] .. key, 0, n - 1)) do
    if redis.call('HGET', KEYS[1] .. id, 'x') == eid then return id end
  end
  return nil
end

-- enqueue_keyed appends a task to its key's list, giving the key a token
-- when it had none (KN > 1: when the task is in the window).
local function enqueue_keyed(id, key)
  if key_conc() > 1 then
    local len = redis.call('RPUSH', KEYS[8] .. key, id)
    redis.call('SADD', KEYS[9], key)
    if len <= KN then token(key) end
    return
  end
  redis.call('RPUSH', KEYS[8] .. key, id)
  if redis.call('SADD', KEYS[9], key) == 1 then token(key) end
end

-- advance_key_multi is advance_key with KN > 1: id leaves its key's list
-- wherever it is; with give, a token goes out for the task that entered
-- the window, or, when no task of the window is in progress any more, for
-- its first (so that a key with tasks in line never has neither a token
-- nor a task in progress, whatever tokens were lost or settings changed).
local function advance_key_multi(key, id, give)
  local lk = KEYS[8] .. key
  redis.call('LREM', lk, 1, id)
  local len = redis.call('LLEN', lk)
  if len == 0 then
    redis.call('SREM', KEYS[9], key)
    return
  end
  if not give then return end
  if len >= KN then
    token(key)
    return
  end
  for _, t in ipairs(redis.call('LRANGE', lk, 0, KN - 1)) do
    local st = redis.call('HGET', KEYS[1] .. t, 's')
    if st == 'active' or st == 'retrying' or st == 'scheduled' then return end
  end
  token(key)
end

-- advance_key removes id from the head of its key's list; with give, the
-- key gets a token for its next task (or leaves the set when none).
local function advance_key(key, id, give)
  if key_conc() > 1 then return advance_key_multi(key, id, give) end
  local lk = KEYS[8] .. key
  if redis.call('LINDEX', lk, 0) == id then redis.call('LPOP', lk) end
  if redis.call('LLEN', lk) > 0 then
    if give then token(key) end
  elseif give then
    -- without give, a token is still out: it removes the key when it finds
    -- the list empty, so the key never has two tokens
    redis.call('SREM', KEYS[9], key)
  end
end

-- Acknowledged ready entries leave their stream by trimming, not one by
-- one: XDEL finds an entry by walking its node of the stream from the
-- start (about 1.7 µs an entry on a busy stream), while XTRIM MINID drops
-- whole nodes. Every entry before the oldest one pending was delivered and
-- acknowledged, so the stream is trimmed up to it, by whole nodes (MINID
-- ~: the node holding it keeps the entries before it, at most a node's
-- worth, 100 by default; an exact trim would walk that node to mark them
-- deleted, a fifth of a finish call's fixed cost); with nothing pending,
-- exactly up to the last entry delivered, so that a queue that ran dry
-- holds no entry. A task running long holds trimming back:
-- while the oldest pending entry's task has run for more than TRIM_LAG ms
-- (or is not running: held back by a pause or a rate limit, or left by a
-- worker that died), the entries acknowledged are deleted as well, so what
-- one long task holds back is at most TRIM_LAG's worth of finished tasks'
-- entries. An entry added TRIM_LAG ago or less holds nothing back for that
-- long yet, and is not looked at (the common case: the queue keeps up); an
-- older one, at the head of a backlog, may well have just been taken.
local TRIM_LAG = 5000

-- id_after returns the smallest entry ID after id.
local function id_after(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return ms .. '-' .. string.format('%d', tonumber(seq) + 1)
end

-- held_long reports whether the pending entry eid of stream has held
-- trimming back for more than TRIM_LAG ms as of now: its task has run that
-- long, or is not running.
local function held_long(stream, eid, now)
  if now - tonumber(string.match(eid, '^(%d+)')) <= TRIM_LAG then return false end
  local e = redis.call('XRANGE', stream, eid, eid)[1]
  if not e then return true end
  local id = e[2][2]
  if e[2][1] == 'k' then id = key_task(id, eid) end
  if not id then return true end
  local v = redis.call('HMGET', KEYS[1] .. id, 's', 'x', 'st')
  return v[1] ~= 'active' or v[2] ~= eid or not v[3] or now - tonumber(v[3]) > TRIM_LAG
end

-- trim removes from stream the entries acknowledged before its oldest
-- pending one; ids are entries just acknowledged, now the call's time. A
-- stream or group that is gone (deleted meanwhile) has nothing to trim.
local function trim(stream, ids, now)
  local pending = redis.pcall('XPENDING', stream, GROUP, '-', '+', 1)
  if pending.err then return end
  local oldest = pending[1]
  if oldest then
    if held_long(stream, oldest[1], now) then
      redis.call('XDEL', stream, unpack(ids))
    end
    redis.call('XTRIM', stream, 'MINID', '~', oldest[1])
    return
  end
  local groups = redis.pcall('XINFO', 'GROUPS', stream)
  if groups.err then return end
  for _, g in ipairs(groups) do
    if g[2] == GROUP then
      for i = 1, #g - 1, 2 do
        if g[i] == 'last-delivered-id' then
          redis.call('XTRIM', stream, 'MINID', id_after(g[i + 1]))
          return
        end
      end
    end
  end
end

local function wake_if_first(id)
  local first = redis.call('ZRANGE', KEYS[3], 0, 0)
  if first[1] == id and redis.call('LLEN', KEYS[10]) == 0 then
    redis.call('LPUSH', KEYS[10], '1')
  end
end

local function release_unique(h, id, u)
  if u == nil then u = redis.call('HGET', h, 'u') end
  -- a throttle's key (field 'ut') stays for its whole TTL
  if u and u ~= '' and not redis.call('HGET', h, 'ut') then
    local uk = KEYS[7] .. u
    if redis.call('GET', uk) == id then redis.call('DEL', uk) end
  end
end

-- queue_webhook schedules the delivery of a task's outcome to its webhook,
-- if it has one, now that it ended. wh is the task's webhook field when the
-- caller read it already (false: none; nil: read here).
local function queue_webhook(h, id, now, wh)
  if wh == nil then wh = redis.call('HEXISTS', h, 'wh') == 1 end
  if wh then
    redis.call('HSET', h, 'whs', 'pending', 'wha', 0)
    redis.call('HDEL', h, 'whe')
    redis.call('ZADD', KEYS[12], now, id)
  end
end

-- finish ends a task as succeeded (S), failed (F) or cancelled (C): its hash
-- is kept for its retention, then the janitor and the TTL remove it. Its
-- entry in the retention index (KEYS[5]) is written by flush_counts.
-- ret, u and wh are the task's retention, unique key and webhook when the
-- caller read them already (nil: read here).
local function finish(h, id, state, code, now, ret, u, wh)
  if ret == nil then ret = redis.call('HGET', h, 'ret') end
  local ms = tonumber(ret or '0')
  if ms < 1 then ms, ret = 1, '1' end
  redis.call('PEXPIRE', h, ret) -- the string read: no number to format
  local score = now + ms
  local at = DONE_AT[score]
  if not at then
    at = tostring(score)
    DONE_AT[score] = at
  end
  table.insert(DONE, at)
  table.insert(DONE, code .. '|' .. id)
  release_unique(h, id, u)
  queue_webhook(h, id, now, wh)
end

-- bury makes a task dead and trims the dead set to dead_max.
local function bury(h, id, now, dead_max, dead_age)
  redis.call('HSET', h, 's', 'dead', 'f', now)
  redis.call('PEXPIRE', h, dead_age)
  redis.call('ZADD', KEYS[4], now, id)
  release_unique(h, id)
  queue_webhook(h, id, now)
  local n = redis.call('ZCARD', KEYS[4])
  if n > dead_max then
    local old = redis.call('ZRANGE', KEYS[4], 0, n - dead_max - 1)
    for _, o in ipairs(old) do
      redis.call('DEL', KEYS[1] .. o)
      count('dead', nil)
      event(o, 'expired', 'dead')
    end
    redis.call('ZREMRANGEBYRANK', KEYS[4], 0, n - dead_max - 1)
  end
end
