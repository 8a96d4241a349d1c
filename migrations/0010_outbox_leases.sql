-- Outbox delivery leases: an instance claims due messages for a while before
-- it sends them, so that of several instances one delivers each message,
-- and another takes over when the holder dies (the lease runs out).
ALTER TABLE outbox ADD COLUMN lease_until INTEGER;
