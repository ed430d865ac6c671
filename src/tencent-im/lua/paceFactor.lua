-- The shared pace factor (1 = full rate) stored in the hash at `key` as f (factor) and t (when, µs): it grows back
-- by PACE_RECOVERY_PER_S of the full rate per second since t. Included by the scripts that pace.
local function paceFactor(key, now)
  local stored = redis.call('HMGET', key, 'f', 't')
  if not stored[1] then return 1 end
  local f = tonumber(stored[1]) + (now - tonumber(stored[2])) / 1000000 * {{PACE_RECOVERY_PER_S}}
  if f > 1 then return 1 end
  return f
end
