-- Counts a user's recent sends (read from the ledger) into the cap's window and sets the marker, so a Redis that lost
-- the window counts too many rather than too few. KEYS[1] the user's sends, KEYS[2] the marker.
-- ARGV[1] longest window ms, then pairs: send id, ms.
for i = 2, #ARGV, 2 do
  redis.call('ZADD', KEYS[1], ARGV[i + 1], ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], '1', 'PX', ARGV[1])
return 1
