-- No index on `events.event_id` (issue #17; SQLite's migration 0025 says
-- why): nothing looks an event up by its id, and each is a fresh UUIDv7.
ALTER TABLE events DROP CONSTRAINT events_event_id_key;
