-- Token signing keys, managed in the admin dashboard as well as in the
-- configuration file. The newest activated key that is not retired signs;
-- every key here verifies (retired ones until the tokens they signed expire).
CREATE TABLE token_keys (
    kid             TEXT PRIMARY KEY,
    secret          TEXT NOT NULL,
    source          TEXT NOT NULL,          -- config | dashboard
    created_at      INTEGER NOT NULL,
    activated_at    INTEGER,                -- NULL: added, never signed
    retired_at      INTEGER                 -- NULL: may sign
) WITHOUT ROWID;
