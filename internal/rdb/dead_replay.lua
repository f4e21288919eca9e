-- dead_replay: add a dead letter's event back to its partition, once.
--
-- KEYS[1]  partition stream
-- KEYS[2]  replay marker of the dead letter (keys.ReplayMark)
-- ARGV[1]  partition size (XADD MAXLEN ~)
-- ARGV[2...] the entry's field, value arguments (key, codec, data, h:NAME)
--
-- Returns the ID of the entry added, or the one an earlier run added when
-- the marker exists (then nothing is added).
local done = redis.call('GET', KEYS[2])
if done then
  return done
end
local args = {'XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*'}
for i = 2, #ARGV do args[#args + 1] = ARGV[i] end
local id = redis.call(unpack(args))
redis.call('SET', KEYS[2], id)
return id
