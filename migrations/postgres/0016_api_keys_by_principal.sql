-- See migrations/0030_api_keys_by_principal.sql.
CREATE INDEX api_keys_by_principal ON api_keys (principal);
