//! Console passwords: argon2id hashes in PHC string format. The plain
//! password is never stored; verification takes constant time in the hash.

use crate::error::{EngineError, Result};
use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;

/// The shortest new password accepted, in characters.
pub const MIN_LEN: usize = 8;
/// The longest: sign-in forms are read up to 64 KiB, and a password that
/// could not be typed into one must not be set.
pub const MAX_LEN: usize = 1024;

/// Checks a new password's length (the only rule: length is what counts).
pub fn check_new(password: &str) -> Result<()> {
    let n = password.chars().count();
    if n < MIN_LEN {
        return Err(EngineError::validation(
            "password",
            format!("a password needs at least {MIN_LEN} characters"),
        ));
    }
    if n > MAX_LEN {
        return Err(EngineError::validation(
            "password",
            format!("a password has at most {MAX_LEN} characters"),
        ));
    }
    Ok(())
}

/// Hashes a password with argon2id and a random salt.
pub fn hash(password: &str) -> Result<String> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| EngineError::Internal(format!("password hash: {e}")))
}

/// Checks that `phc` is an argon2 PHC string this engine can verify.
pub fn check_phc(phc: &str) -> Result<()> {
    let parsed = PasswordHash::new(phc)
        .map_err(|e| EngineError::validation("password_hash", format!("not a PHC string: {e}")))?;
    if !parsed.algorithm.as_str().starts_with("argon2") {
        return Err(EngineError::validation(
            "password_hash",
            format!("algorithm {} is not argon2", parsed.algorithm),
        ));
    }
    Ok(())
}

/// Whether `password` matches the PHC string; a malformed hash never matches.
pub fn verify(phc: &str, password: &str) -> bool {
    PasswordHash::new(phc)
        .map(|h| Argon2::default().verify_password(password.as_bytes(), &h).is_ok())
        .unwrap_or(false)
}

/// A hash of a random password, verified when the principal is unknown so
/// that a wrong name costs as much time as a wrong password.
pub(crate) fn decoy() -> &'static str {
    static DECOY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DECOY.get_or_init(|| hash(&crate::ids::new_opaque()).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_and_verify() {
        let phc = hash("correct horse").unwrap();
        assert!(phc.starts_with("$argon2id$"));
        check_phc(&phc).unwrap();
        assert!(verify(&phc, "correct horse"));
        assert!(!verify(&phc, "wrong"));
        assert!(!verify("not a hash", "correct horse"));
        assert!(check_phc("$pbkdf2$x").is_err());
    }
}
