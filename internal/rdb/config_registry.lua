-- config_registry: write the stream and task queue definitions of a
-- configuration file into the app's registries, all or nothing, provided
-- each entry written still holds what the caller read when it planned the
-- change (compare and set).
--
-- KEYS[1]  the app's stream registry (hash: stream name to definition)
-- KEYS[2]  the app's task queue registry (hash: queue name to definition)
-- ARGV[1]  number of stream entries S
-- ARGV[2]  number of queue entries Q
-- then S triples for streams, then Q triples for queues:
--          name, expected current value ("" when the entry must be absent),
--          new definition (JSON)
--
-- Returns {1} when every entry was written, or {0, kind, name} naming the
-- first entry ("stream" or "queue") whose value changed since it was read;
-- nothing is written then.
local s = tonumber(ARGV[1])
local q = tonumber(ARGV[2])
local function check(key, base, n, kind)
  for i = 0, n - 1 do
    local name = ARGV[base + 3 * i]
    local want = ARGV[base + 3 * i + 1]
    local cur = redis.call('HGET', key, name)
    if cur == false then cur = '' end
    if cur ~= want then return {0, kind, name} end
  end
  return nil
end
local bad = check(KEYS[1], 3, s, 'stream') or check(KEYS[2], 3 + 3 * s, q, 'queue')
if bad then return bad end
for i = 0, s - 1 do
  redis.call('HSET', KEYS[1], ARGV[3 + 3 * i], ARGV[3 + 3 * i + 2])
end
for i = 0, q - 1 do
  local b = 3 + 3 * s + 3 * i
  redis.call('HSET', KEYS[2], ARGV[b], ARGV[b + 2])
end
return {1}
