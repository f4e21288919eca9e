-- register_stream: record a stream definition in the app registry unless a
-- definition with different routing (partition count or key field) is there.
--
-- KEYS[1]  registry hash of the app
-- ARGV[1]  stream name (hash field)
-- ARGV[2]  definition, JSON
-- ARGV[3]  partition count
-- ARGV[4]  key field ("" when the key is computed by a function)
--
-- Returns false when the definition was written (or kept), or the
-- conflicting definition (JSON) when routing differs; nothing is written then.
-- A stream registered as keyed by a function (no key field) accepts a tool
-- that routes by a field it names, with the same partition count: the
-- registered definition is then kept as it is.
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if cur then
  local ok, d = pcall(cjson.decode, cur)
  if ok and type(d) == 'table' then
    local kf = d['key_field']
    if type(kf) ~= 'string' then kf = '' end
    if tonumber(d['partitions']) ~= tonumber(ARGV[3]) then
      return cur
    end
    if kf ~= ARGV[4] then
      if kf == '' then return false end
      return cur
    end
  end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return false
