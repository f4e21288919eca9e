-- enqueue: create tasks, ready now or scheduled for later.
--
-- KEYS     only the keys an enqueue writes (Redis checks every key given to
--          EVAL against the user's ACL for reading and writing, so a
--          producer's ACL names these and no others):
--   KEYS[1]  staging prefix (+ task ID): a new task's hash is written there
--            and renamed into place with RENAMENX, which never replaces a key
--   KEYS[2]  ready stream prefix (+ priority level)
--   KEYS[3]  scheduled set
--   KEYS[4]  counts per state
--   KEYS[5]  unique lock prefix (+ unique key)
--   KEYS[6]  key list prefix (+ task key)
--   KEYS[7]  set of keys with tasks waiting or running
--   KEYS[8]  wake list of the queue's leader
--   KEYS[9]  events stream (see event in common.lua)
-- ARGV[1]  task hash prefix (+ task ID): read, and written only by RENAMENX
-- ARGV[2]  number of tasks n, then 15 values per task:
--          id, payload, level, run-at ms (0 = now), max retries, timeout ms,
--          retention ms, unique key ("" = none), unique TTL ms, task key
--          ("" = unkeyed), webhook URL ("" = none), enqueue token ("" =
--          none: a random value of the caller's enqueue, kept in field 'n'),
--          headers (a JSON object of strings, kept in field 'h'; "" = none),
--          webhook signing secret (kept in field 'whk'; "" = none),
--          unique mode: "" (the key refuses tasks until its task ends),
--          "debounce" (a task of the key still scheduled gets this one's
--          payload, headers and due time instead: status 3) or "throttle"
--          (the key refuses tasks for its whole TTL: field 'ut' keeps
--          release_unique from freeing it when the task ends)
-- ARGV[3+15n] the live settings hash: read only (events on: see event)
-- ARGV[4+15n] (keyed queues; absent: 1) key concurrency: tasks of a key in
--          progress at once (see common.lua's KN)
-- ARGV[5+15n] (keyed queues; absent or 0: none) the most tasks a key may
--          hold in line (its list: waiting, running or waiting out a
--          retry); a task that would make it hold more is refused (status
--          4) and nothing of it is written
--
-- Returns {status, id, ...} per task: status 1 when created, 0 when a task
-- with this ID or unique key exists (id is then the existing task's ID),
-- 2 when the existing task is this very one, created by an earlier run of
-- the same enqueue (same ID and same non-empty token) whose reply was lost:
-- running a call again never creates a task twice; 3 when a debounce
-- updated the key's scheduled task (id is its ID); 4 when its key's line
-- is full (ARGV[4+15n]; id is its own ID). A debounce writes that
-- task's hash, which a producer's ACL does not allow.

-- The helpers of common.lua index KEYS by the common layout: the keys of
-- this call go where they look for them (an enqueue never touches the
-- others).
local STAGE = KEYS[1]
KEYS[10], KEYS[9], KEYS[8], KEYS[7], KEYS[6] = KEYS[8], KEYS[7], KEYS[6], KEYS[5], KEYS[4]
KEYS[1], KEYS[4], KEYS[5] = ARGV[1], false, false
local n = tonumber(ARGV[2])
EV_CONF = ARGV[3 + n * 15]
KN = math.max(math.floor(tonumber(ARGV[4 + 15 * n] or '1') or 1), 1)
local backlog = tonumber(ARGV[5 + 15 * n] or '0') or 0
local now = now_ms()
local now_text = tostring(now)
local out = {}
for i = 0, n - 1 do
  local b = 3 + i * 15
  local id, payload, level, run_at = ARGV[b], ARGV[b + 1], ARGV[b + 2], tonumber(ARGV[b + 3])
  local ukey, uttl, key, token, mode = ARGV[b + 7], ARGV[b + 8], ARGV[b + 9], ARGV[b + 11], ARGV[b + 14]
  local h = KEYS[1] .. id
  local existing = nil
  if ukey ~= '' then existing = redis.call('GET', KEYS[7] .. ukey) end
  local debounced = false
  if existing and mode == 'debounce' and existing ~= id then
    local eh = KEYS[1] .. existing
    if redis.call('HGET', eh, 's') == 'scheduled' and run_at > now then
      redis.call('HSET', eh, 'p', payload, 'd', ARGV[b + 3])
      if ARGV[b + 12] ~= '' then redis.call('HSET', eh, 'h', ARGV[b + 12]) else redis.call('HDEL', eh, 'h') end
      redis.call('ZADD', KEYS[3], ARGV[b + 3], existing)
      wake_if_first(existing)
      redis.call('SET', KEYS[7] .. ukey, existing, 'PX', uttl)
      debounced = true
    else
      existing = nil -- ready, running or ended: a new task takes the key
    end
  end
  if not existing and redis.call('EXISTS', h) == 1 then existing = id end
  if debounced then
    table.insert(out, 3)
    table.insert(out, existing)
  elseif existing and existing == id and token ~= '' and redis.call('HGET', h, 'n') == token then
    table.insert(out, 2)
    table.insert(out, id)
  elseif existing then
    table.insert(out, 0)
    table.insert(out, existing)
  elseif key ~= '' and backlog > 0 and redis.call('LLEN', KEYS[8] .. key) >= backlog then
    table.insert(out, 4)
    table.insert(out, id)
  else
    local state, due = 'pending', now_text
    if run_at > now then state, due = 'scheduled', ARGV[b + 3] end
    -- An unkeyed task ready now gets its ready entry first, so that one
    -- HSET writes the hash with the entry's ID (x), as push_ready would.
    local x = nil
    if state == 'pending' and key == '' then x = redis.call('XADD', KEYS[2] .. level, '*', 't', id) end
    local st = STAGE .. id
    if x then
      redis.call('HSET', st, 's', state, 'p', payload, 'l', level, 'a', '0', 'r', ARGV[b + 4], 'to', ARGV[b + 5],
        'ret', ARGV[b + 6], 'u', ukey, 'k', key, 'e', now_text, 'd', due, 'x', x)
    else
      redis.call('HSET', st, 's', state, 'p', payload, 'l', level, 'a', '0', 'r', ARGV[b + 4], 'to', ARGV[b + 5],
        'ret', ARGV[b + 6], 'u', ukey, 'k', key, 'e', now_text, 'd', due)
    end
    if ARGV[b + 10] ~= '' then redis.call('HSET', st, 'wh', ARGV[b + 10]) end
    if ARGV[b + 13] ~= '' then redis.call('HSET', st, 'whk', ARGV[b + 13]) end
    if token ~= '' then redis.call('HSET', st, 'n', token) end
    if mode == 'throttle' then redis.call('HSET', st, 'ut', '1') end
    if ARGV[b + 12] ~= '' then redis.call('HSET', st, 'h', ARGV[b + 12]) end
    -- h does not exist (checked above, in this same script): the rename
    -- cannot fail
    redis.call('RENAMENX', st, h)
    if state == 'scheduled' then
      redis.call('ZADD', KEYS[3], due, id)
      wake_if_first(id)
    elseif key ~= '' then
      enqueue_keyed(id, key)
    end
    count(nil, state)
    event(id, state, nil, '0')
    if ukey ~= '' then redis.call('SET', KEYS[7] .. ukey, id, 'PX', uttl) end
    table.insert(out, 1)
    table.insert(out, id)
  end
end
flush_counts()
return out
