-- Counts a user's recent sends (read from the ledger) into the cap's window and marks it seeded, so a Redis that lost
-- the window counts too many rather than too few. KEYS[1] the user's sends.
-- ARGV[1] longest window ms, then pairs: send id (or "maybe:<id>" for a row still being worked), ms.
-- Only the first seed after a loss counts: no admission is decided before it (admitCapped waits for the mark), so its
-- ledger read is complete; a later one may have read rows decided since and would count them again.
if redis.call('ZSCORE', KEYS[1], '~seeded') then return 0 end
for i = 2, #ARGV, 2 do
  redis.call('ZADD', KEYS[1], 'NX', ARGV[i + 1], ARGV[i])
end
redis.call('ZADD', KEYS[1], 0, '~seeded')
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
