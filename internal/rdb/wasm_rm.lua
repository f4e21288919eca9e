-- wasm_rm.lua: removes a name and all its versions, and the modules no
-- other version refers to.
--
-- KEYS[1] the hash of names
-- KEYS[2] the hash of the name's versions
-- KEYS[3] the hash of module references (field = content hash)
-- KEYS[4..] the module of each version, by content hash (as read before)
-- ARGV[1] the name
-- ARGV[2] the number of versions read before
-- ARGV[3..] the content hash of each version, in the order of KEYS[4..]
--
-- Returns the number of versions removed, or -1 when the name's versions
-- changed since they were read (nothing is removed: read them again).
if redis.call('HLEN', KEYS[2]) ~= tonumber(ARGV[2]) then return -1 end
for i = 3, #ARGV do
  local n = redis.call('HINCRBY', KEYS[3], ARGV[i], -1)
  if n <= 0 then
    redis.call('HDEL', KEYS[3], ARGV[i])
    redis.call('DEL', KEYS[i + 1])
  end
end
redis.call('DEL', KEYS[2])
redis.call('HDEL', KEYS[1], ARGV[1])
return #ARGV - 2
