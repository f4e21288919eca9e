-- appended: how many entries were appended to each of several partition
-- streams in each bucket of the last window, counted from their entry IDs
-- (an entry ID starts with the server time of its XADD, in ms), without
-- sending any entry back. The buckets end at the server's TIME. At most
-- ARGV[3] entries of each stream are read, newest first, 1,000 at a time;
-- a stream with more in the window is reported capped, its count exact
-- from the oldest entry read on.
--
-- KEYS[i]  a partition stream
-- ARGV[1]  bucket width in ms
-- ARGV[2]  number of buckets
-- ARGV[3]  the most entries read per stream
--
-- Returns {now ms, {per key: {capped (0 or 1), oldest ms read or -1,
-- count of bucket 1 (oldest), ..., count of bucket n (ending now)}}}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local width, n, cap = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local start = now - n * width
local out = {}
for i, key in ipairs(KEYS) do
  local counts = {}
  for b = 1, n do counts[b] = 0 end
  local read, oldest, capped, hi = 0, -1, 0, '+'
  while true do
    local es = redis.call('XREVRANGE', key, hi, tostring(start), 'COUNT', math.min(1000, cap - read))
    for _, e in ipairs(es) do
      local ms = tonumber(string.match(e[1], '^(%d+)'))
      local b = math.floor((ms - start) / width) + 1
      if b > n then b = n end -- an ID ahead of TIME (a clock stepped back)
      if b >= 1 then counts[b] = counts[b] + 1 end
      oldest = ms
      hi = '(' .. e[1]
    end
    read = read + #es
    if #es < 1000 then break end
    if read >= cap then
      capped = 1
      break
    end
  end
  local r = {capped, oldest}
  for b = 1, n do r[#r + 1] = counts[b] end
  out[i] = r
end
return {now, out}
