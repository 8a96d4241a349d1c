-- Interrupt tokens carry their claims; only revocations are stored.
CREATE TABLE revoked_tokens (
    jti             TEXT PRIMARY KEY,
    revoked_at      INTEGER NOT NULL
) WITHOUT ROWID;
