-- register_stream: record a stream definition in the app registry unless a
-- definition with different routing (partition count or key field) is there,
-- and settle the stream's entry codec: the codec of entries written without
-- a codec field. The first registration sets it to its own codec; later ones
-- keep it, so entries written before a codec change still decode.
--
-- KEYS[1]  registry hash of the app
-- ARGV[1]  stream name (hash field)
-- ARGV[2]  definition, JSON object without "entry_codec"
-- ARGV[3]  partition count
-- ARGV[4]  key field ("" when the key is computed by a function)
-- ARGV[5]  codec of the declaration
--
-- Returns {1, entry codec} when the definition was written (or kept), with
-- "entry_codec" added; the entry codec is "" when a kept definition has none
-- (entries must then carry their codec). Returns {0, conflicting definition}
-- when routing differs; nothing is written then. A stream registered as keyed
-- by a function (no key field) accepts a tool that routes by a field it
-- names, with the same partition count: the registered definition is then
-- kept as it is.
local ec = ARGV[5]
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if cur then
  local ok, d = pcall(cjson.decode, cur)
  if ok and type(d) == 'table' then
    local kf = d['key_field']
    if type(kf) ~= 'string' then kf = '' end
    local old = d['entry_codec']
    if type(old) ~= 'string' then old = '' end
    if tonumber(d['partitions']) ~= tonumber(ARGV[3]) then
      return {0, cur}
    end
    if kf ~= ARGV[4] then
      if kf == '' then return {1, old} end
      return {0, cur}
    end
    if old ~= '' then ec = old end
  end
end
local def = string.sub(ARGV[2], 1, -2) .. ',"entry_codec":' .. cjson.encode(ec) .. '}'
redis.call('HSET', KEYS[1], ARGV[1], def)
return {1, ec}
