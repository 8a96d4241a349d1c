-- Run callbacks (createRun.callbackUrl) share the outbox with email:
-- kind = 'callback', reason = the event type, address = the callback URL.
ALTER TABLE outbox ADD COLUMN body TEXT;               -- callback: the JSON body POSTed (fixed at enqueue)
ALTER TABLE outbox ADD COLUMN response_status INTEGER;  -- callback: HTTP status of the last attempt
CREATE INDEX outbox_kind ON outbox (kind, id);
