-- add: add an order to its customer's total unless it was counted before.
--
-- KEYS[1]  totals hash: customer -> total in cents
-- KEYS[2]  last IDs hash: customer -> entry ID of the last order counted
-- ARGV[1]  customer
-- ARGV[2]  entry ID of the order ("ms-seq")
-- ARGV[3]  amount in cents (an integer)
--
-- Returns 1 when the order was counted, 0 when an order at or after this
-- entry ID was counted before (a redelivery).
local function parse(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return tonumber(ms), tonumber(seq)
end
local last = redis.call('HGET', KEYS[2], ARGV[1])
if last then
  local lms, lseq = parse(last)
  local ms, seq = parse(ARGV[2])
  if ms < lms or (ms == lms and seq <= lseq) then
    return 0
  end
end
redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[3])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return 1
