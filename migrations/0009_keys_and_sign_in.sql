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
