-- store_assignment: write a processor's new assignment, fenced by the admin
-- lock and the version it was computed from (compare-and-set), so a
-- rebalancer that stalled while holding the admin lock cannot overwrite a
-- newer assignment.
--
-- KEYS[1]  the processor's admin lock
-- KEYS[2]  the processor's assignment (string, JSON with a "version" field)
-- ARGV[1]  the caller's admin lock value
-- ARGV[2]  the version the new assignment was computed from (0: none)
-- ARGV[3]  the new assignment, JSON, whose version is ARGV[2] + 1
--
-- Returns 1 when written, 0 when the caller no longer holds the admin lock,
-- -1 when the stored version is not ARGV[2].
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
local cur = redis.call('GET', KEYS[2])
local version = 0
if cur then
  local ok, d = pcall(cjson.decode, cur)
  if ok and type(d) == 'table' and tonumber(d['version']) then
    version = tonumber(d['version'])
  end
end
if version ~= tonumber(ARGV[2]) then
  return -1
end
redis.call('SET', KEYS[2], ARGV[3])
return 1
