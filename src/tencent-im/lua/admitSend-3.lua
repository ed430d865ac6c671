-- Admission at send time, against a log of the last second's sends: refused while a back-off is on or while the
-- sliding second already holds `cap` sends. This is what bounds every sliding second, even when a process reaches
-- its slot late (GC, a full CPU) and its send would bunch with the next ones.
-- KEYS[1] send log (sorted set), KEYS[2] paused-until; ARGV[1] cap, ARGV[2] unique member. Returns 1 or 0.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
if tonumber(redis.call('GET', KEYS[2]) or '0') > now then return 0 end
--- @include "paceFactor"
local paceKey = KEYS[3]
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%.0f', now - 1000000))
if redis.call('ZCARD', KEYS[1]) >= math.floor(tonumber(ARGV[1]) * paceFactor(paceKey, now)) then return 0 end
redis.call('ZADD', KEYS[1], string.format('%.0f', now), ARGV[2])
redis.call('PEXPIRE', KEYS[1], 2000)
return 1
