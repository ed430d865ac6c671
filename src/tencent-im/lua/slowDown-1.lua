-- Over-frequency: lower the shared pace (see PACE_DECREASE), unless it was lowered within the hold. Returns the new
-- factor ×1000. KEYS[1] pace hash.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
--- @include "paceFactor"
local paceKey = KEYS[1]
local f = paceFactor(paceKey, now)
local last = tonumber(redis.call('HGET', KEYS[1], 'd') or '0')
if now - last >= {{PACE_HOLD_US}} then
  f = math.max({{PACE_FLOOR}}, f * {{PACE_DECREASE}})
  redis.call('HSET', KEYS[1], 'f', tostring(f), 't', string.format('%.0f', now), 'd', string.format('%.0f', now))
  redis.call('PEXPIRE', KEYS[1], {{PACE_TTL_MS}})
end
return math.floor(f * 1000)
