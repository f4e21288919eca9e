-- mw_rate: reserve the next slot of a rate limit (GCRA, server time), for
-- middleware.RateLimit. Every caller gets a slot: the script returns how
-- long to wait for it, so a limited event waits rather than being dropped.
--
-- KEYS[1]  rate state (string: theoretical arrival time, µs)
-- ARGV[1]  emission interval T in µs (1e6 / rate)
-- ARGV[2]  burst tolerance in µs (T × (burst − 1))
--
-- Returns the wait in µs before the caller's slot (0: go now).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local allow = tat - burst
local wait = 0
if allow > now then wait = allow - now end
tat = tat + interval
redis.call('SET', KEYS[1], string.format('%d', tat), 'PX', math.floor((tat - now) / 1000) + 1000)
return wait
