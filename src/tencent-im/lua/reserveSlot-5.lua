-- The next send slot for the whole app, in Redis time (so process clocks do not matter): the later of now and the
-- stored "next free" time, which moves one interval past it (one warm-up interval during a warm-up). Microseconds,
-- as integers (exact in Lua's doubles). With interval 0 (no rate limit) it writes nothing and only reports an active
-- back-off. A slot further than ARGV[2] µs away is not taken (so a sender that cannot wait that long wastes no slot).
-- Heads (ARGV[6] not empty): each process's oldest send still without a slot registers its age (ARGV[5]); while an
-- older head of another process is registered, a younger one takes nothing (behind-older 1), so slots go oldest
-- first across processes. A head that stops asking (a dead process) drops out when its expiry passes.
-- KEYS[1] next-free, KEYS[2] burst start, KEYS[3] heads by age, KEYS[4] heads by expiry; ARGV[1] interval µs,
-- ARGV[2] longest wait µs, ARGV[3] warm-up length µs, ARGV[4] warm-up interval µs, ARGV[5] age, ARGV[6] head id.
-- Returns { slot µs, Redis now µs, taken 1/0, behind-older 1/0 }.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
--- @include "paceFactor"
local paceKey = KEYS[5]
local pace = paceFactor(paceKey, now)
local interval = math.ceil(tonumber(ARGV[1]) / pace)
local maxWait = tonumber(ARGV[2])
local nextFree = tonumber(redis.call('GET', KEYS[1]) or '0')
local slot = math.max(now, nextFree)
local head = ARGV[6]
if head ~= '' then
  for _, gone in ipairs(redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now)) do
    redis.call('ZREM', KEYS[3], gone)
    redis.call('ZREM', KEYS[4], gone)
  end
  local age = tonumber(ARGV[5])
  redis.call('ZADD', KEYS[3], age, head)
  local oldest = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
  local behind = oldest[1] ~= head and tonumber(oldest[2]) < age
  if behind or slot - now > maxWait then
    -- Asks again in about an interval (behind an older head) or when the queue is short enough: expire after that.
    local again = now + interval
    if not behind then again = slot - maxWait end
    redis.call('ZADD', KEYS[4], string.format('%.0f', again + 250000), head)
    redis.call('PEXPIRE', KEYS[3], 60000)
    redis.call('PEXPIRE', KEYS[4], 60000)
    return { string.format('%.0f', slot), string.format('%.0f', now), 0, behind and 1 or 0 }
  end
  redis.call('ZREM', KEYS[3], head)
  redis.call('ZREM', KEYS[4], head)
elseif slot - now > maxWait then
  return { string.format('%.0f', slot), string.format('%.0f', now), 0, 0 }
end
if interval > 0 then
  local burst = tonumber(redis.call('GET', KEYS[2]) or '0')
  if nextFree < now - 1000000 then
    burst = now
    redis.call('SET', KEYS[2], string.format('%.0f', now), 'PX', 60000)
  end
  local spacing = interval
  if slot - burst < tonumber(ARGV[3]) then spacing = math.ceil(tonumber(ARGV[4]) / pace) end
  redis.call('SET', KEYS[1], string.format('%.0f', slot + spacing), 'PX', math.ceil((slot + spacing - now) / 1000) + 1000)
end
return { string.format('%.0f', slot), string.format('%.0f', now), 1, 0 }
