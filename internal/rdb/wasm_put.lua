-- wasm_put.lua: stores a version of a WebAssembly module under a name, unless
-- the name's current version is the same module with the same contract.
--
-- KEYS[1] the hash of names (field = name, value = its current version)
-- KEYS[2] the hash of the name's versions (field = version number)
-- KEYS[3] the module's bytes, by content hash
-- KEYS[4] the hash of module references (field = content hash, value = count)
-- KEYS[5] the hash of version counters (field = name; kept after a removal,
--         so a name's versions never repeat)
-- ARGV[1] the name
-- ARGV[2] the version as a JSON object, without its "version"
-- ARGV[3] the module's bytes
--
-- Returns {1, version JSON} for a new version, {0, current version JSON}
-- when the current version is the same module.
local new = cjson.decode(ARGV[2])
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if cur then
  local c = cjson.decode(cur)
  if c.hash == new.hash and c.contract == new.contract and c.reusable == new.reusable then
    return {0, cur}
  end
end
new.version = redis.call('HINCRBY', KEYS[5], ARGV[1], 1)
local v = cjson.encode(new)
redis.call('SET', KEYS[3], ARGV[3], 'NX')
redis.call('HINCRBY', KEYS[4], new.hash, 1)
redis.call('HSET', KEYS[2], new.version, v)
redis.call('HSET', KEYS[1], ARGV[1], v)
return {1, v}
