-- The person a run is for (see migrations/0014_requested_by.sql).
ALTER TABLE runs ADD COLUMN requested_by TEXT COLLATE "C";
