-- Console sign-in: an argon2 PHC string per principal (NULL: may not sign in).
ALTER TABLE principals ADD COLUMN password_hash TEXT;
