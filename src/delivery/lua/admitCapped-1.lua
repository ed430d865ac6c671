-- A per-user sliding-window cap (the push cap): admit this send if every window still has room, counting it.
-- KEYS[1] the user's sends (sorted set: member = send id, score = ms; member "~seeded" at score 0 says the window was
-- counted from the ledger: kept in the same key, so losing part of Redis cannot leave the mark without the sends).
-- ARGV[1] now ms, ARGV[2] send id, ARGV[3] longest window ms, then pairs ARGV[4..]: max, window ms.
-- Returns 1 admitted, 2 admitted before (a retry of the same send counts once), 0 over the cap, -1 not seeded (the
-- caller counts the ledger's recent sends in with seedCapped first).
-- A "maybe:<id>" member is a row the ledger saw being worked when the window was rebuilt: it may have been admitted
-- before the loss, so it holds a place until that row itself asks, which decides it (this send's own is not counted).
if not redis.call('ZSCORE', KEYS[1], '~seeded') then return -1 end
local now = tonumber(ARGV[1])
if redis.call('ZSCORE', KEYS[1], ARGV[2]) then return 2 end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '(0', now - tonumber(ARGV[3]))
local maybe = 'maybe:' .. ARGV[2]
local ownAt = redis.call('ZSCORE', KEYS[1], maybe)
for i = 4, #ARGV, 2 do
  local max = tonumber(ARGV[i])
  local window = tonumber(ARGV[i + 1])
  local counted = redis.call('ZCOUNT', KEYS[1], now - window, '+inf')
  if ownAt and tonumber(ownAt) >= now - window then counted = counted - 1 end
  if counted >= max then
    redis.call('ZREM', KEYS[1], maybe)
    return 0
  end
end
redis.call('ZREM', KEYS[1], maybe)
redis.call('ZADD', KEYS[1], now, ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
