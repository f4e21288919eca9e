-- output_relay: add entries of a processor partition's outbox to one
-- destination partition, skipping those already added: an outbox entry is
-- added only if its ID is above the last one relayed from that outbox to
-- this partition, which is then kept. A relay repeated (after a crash, or
-- by two workers at once) adds nothing twice, and the outbox's order is
-- kept.
--
-- KEYS[1]  the destination partition stream
-- KEYS[2]  the destination's Relayed hash (same hash slot)
-- ARGV[1]  the outbox's name in that hash (OutboxSource)
-- ARGV[2]  the partition size (XADD MAXLEN ~)
-- ARGV[3]  "1" when the stream must have room (see guarded_add.lua)
-- ARGV[4..] for each entry, in outbox order: its outbox ID, k, then the k
--          field and value arguments
--
-- Returns {1, added} when relayed, {0, unprocessed} when a guarded stream
-- has no room for the entries to add (nothing added).
local function after(a, b)
  local ams, aseq = string.match(a, '^(%d+)-(%d+)$')
  local bms, bseq = string.match(b, '^(%d+)-(%d+)$')
  ams, aseq, bms, bseq = tonumber(ams), tonumber(aseq), tonumber(bms), tonumber(bseq)
  return ams > bms or (ams == bms and aseq > bseq)
end
local last = redis.call('HGET', KEYS[2], ARGV[1])
local todo = {}
local i = 4
while i <= #ARGV do
  local k = tonumber(ARGV[i + 1])
  if not last or after(ARGV[i], last) then
    todo[#todo + 1] = i
  end
  i = i + 2 + k
end
if #todo == 0 then
  return {1, 0}
end
if ARGV[3] == '1' and redis.call('EXISTS', KEYS[1]) == 1 then
  local worst, len = 0, redis.call('XLEN', KEYS[1])
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
    local lag, pending = nil, 0
    for j = 1, #g, 2 do
      if g[j] == 'lag' then lag = g[j + 1] end
      if g[j] == 'pending' then pending = g[j + 1] end
    end
    if type(lag) ~= 'number' then lag = len end
    if lag + pending > worst then worst = lag + pending end
  end
  if worst + #todo > tonumber(ARGV[2]) then
    return {0, worst}
  end
end
local top
for _, at in ipairs(todo) do
  local k = tonumber(ARGV[at + 1])
  local args = {'XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '*'}
  for j = 1, k do args[#args + 1] = ARGV[at + 1 + j] end
  redis.call(unpack(args))
  top = ARGV[at]
end
redis.call('HSET', KEYS[2], ARGV[1], top)
return {1, #todo}
