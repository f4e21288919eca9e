-- group_counters: the counters of several partition streams and of one
-- consumer group on each, in one call (the retention and trim checks; the
-- keys must share a hash slot on Cluster). Each stream costs XINFO STREAM
-- (without FULL) and XINFO GROUPS, both O(1) in the stream's length.
--
-- KEYS[i]  a partition stream
-- ARGV[1]  the consumer group
--
-- Returns one element per key: {0} when the stream does not exist, else
-- {1, length, entries-added, first entry ID or "", group?, last-delivered-id,
-- entries-read}, group? being 1 when the group exists (0: the last two are
-- meaningless) and entries-read -1 when Redis does not know it.
local out = {}
for i, key in ipairs(KEYS) do
  local info = redis.pcall('XINFO', 'STREAM', key)
  if info.err then
    out[i] = {0}
  else
    local f = {}
    for j = 1, #info, 2 do f[info[j]] = info[j + 1] end
    local first = ''
    if f['first-entry'] then first = f['first-entry'][1] end
    local r = {1, f['length'], f['entries-added'], first, 0, '', -1}
    for _, g in ipairs(redis.call('XINFO', 'GROUPS', key)) do
      local gf = {}
      for j = 1, #g, 2 do gf[g[j]] = g[j + 1] end
      if gf['name'] == ARGV[1] then
        r[5] = 1
        r[6] = gf['last-delivered-id']
        if gf['entries-read'] then r[7] = gf['entries-read'] end
      end
    end
    out[i] = r
  end
end
return out
