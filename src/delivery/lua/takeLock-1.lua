-- Take or keep the reconciler's leader lock: set it if free, extend it if ours. One script, so two processes never
-- both hold it. KEYS[1] lock; ARGV[1] owner, ARGV[2] TTL ms. Returns 1 when held.
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0
