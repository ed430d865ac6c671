-- Counts a user's recent sends (read from the ledger) into the cap's window and sets the marker, so a Redis that lost
-- the window counts too many rather than too few. KEYS[1] the user's sends, KEYS[2] the marker.
-- ARGV[1] longest window ms, then pairs: send id (or "maybe:<id>" for a row still being worked), ms.
-- Only the first seed after a loss counts: no admission is decided before it (admitCapped waits for the marker), so its
-- ledger read is complete; a later one may have read rows decided since and would count them again.
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
for i = 2, #ARGV, 2 do
  redis.call('ZADD', KEYS[1], 'NX', ARGV[i + 1], ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], '1', 'PX', ARGV[1])
return 1
