-- Token signing keys are the instance operator's: kept in the configuration
-- (source 'config') or added with the CLI (source 'cli'). A revoked key
-- verifies nothing. Keys added through the dashboard may have had a secret
-- typed by a tenant admin: they are revoked here.
ALTER TABLE token_keys ADD COLUMN revoked_at INTEGER;
UPDATE token_keys
   SET revoked_at = CAST(strftime('%s', 'now') AS INTEGER) * 1000,
       retired_at = COALESCE(retired_at, CAST(strftime('%s', 'now') AS INTEGER) * 1000)
 WHERE source = 'dashboard';

-- Bumped whenever a principal's password is set or removed; a console
-- session signed in under another generation has ended.
ALTER TABLE principals ADD COLUMN password_generation INTEGER NOT NULL DEFAULT 0;

-- No usable link stays stored: messages delivered before this release keep
-- their text with the token cut out (each mail carries one link, followed
-- by a line end), and idempotency records of token resolves, which named
-- the token, are dropped (they only mattered while the link was live).
UPDATE outbox
   SET message = substr(message, 1, instr(message, '/t/ow2.') + 2) || '[link]' ||
                 substr(message, instr(message, '/t/ow2.') + instr(substr(message, instr(message, '/t/ow2.')), char(10)) - 1)
 WHERE instr(message, '/t/ow2.') > 0
   AND instr(substr(message, instr(message, '/t/ow2.')), char(10)) > 0;
UPDATE outbox
   SET message = substr(message, 1, instr(message, '/t/ow2.') + 2) || '[link]'
 WHERE instr(message, '/t/ow2.') > 0;
DELETE FROM idempotency WHERE operation LIKE 'resolveInterruptByToken ow2.%';
