-- Push "next free" and "paused until" ARGV[1] ms past now: new reservations wait for the end of the pause, and
-- sends holding an earlier slot are refused admission and queue up again behind it.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local untilUs = now + tonumber(ARGV[1]) * 1000
local ttl = tonumber(ARGV[1]) + 1000
if tonumber(redis.call('GET', KEYS[1]) or '0') < untilUs then
  redis.call('SET', KEYS[1], string.format('%.0f', untilUs), 'PX', ttl)
end
redis.call('SET', KEYS[2], string.format('%.0f', untilUs), 'PX', ttl)
return 0
