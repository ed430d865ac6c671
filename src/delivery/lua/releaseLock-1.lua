-- Give the reconciler's leader lock up, only if it is still ours. KEYS[1] lock; ARGV[1] owner.
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
