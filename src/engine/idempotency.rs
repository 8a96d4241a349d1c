//! Idempotency-Key: one stored outcome per key, operation and body.

use super::*;
use crate::store::idempotency as store;

/// An Idempotency-Key bound to one operation and request body.
#[derive(Debug, Clone)]
pub struct Idem {
    key: String,
    operation: String,
    digest: String,
}

impl Idem {
    /// Checks the key's grammar and fingerprints the request.
    pub fn new(key: &str, operation: &str, body: &Value) -> Result<Idem> {
        if !ids::is_idempotency_key(key) {
            return Err(EngineError::IdempotencyKeyInvalid(
                "Idempotency-Key must match ^[A-Za-z0-9._~-]{22,128}$".into(),
            ));
        }
        let digest = hex::encode(Sha256::digest(
            format!("{operation}\n{}", crate::store::json_text(body)).as_bytes(),
        ));
        Ok(Idem {
            key: key.to_string(),
            operation: operation.to_string(),
            digest,
        })
    }
}

/// Runs `op` under an optional Idempotency-Key: a stored outcome for the same
/// key and body is replayed; the same key with another body is refused.
/// The request a key stands for includes who sent it (`caller`, a
/// principal id): another caller presenting the same key is refused as a
/// mismatch and never given the stored answer, which their own request
/// might not have earned (an approver's vote replayed to someone who may
/// not vote).
pub(super) fn run_idempotent<T, F>(
    conn: &WriteConn,
    tenant: &str,
    caller: &str,
    idem: Option<Idem>,
    op: F,
) -> Result<Outcome<T>>
where
    T: Serialize + DeserializeOwned,
    F: FnOnce(&WriteConn) -> Result<T>,
{
    let Some(mut idem) = idem else {
        // Without a key an error simply rolls the command back (the writer's savepoint).
        return op(conn).map(|v| Outcome {
            result: Ok(v),
            replayed: false,
        });
    };
    idem.digest = hex::encode(Sha256::digest(format!("{}\n{caller}", idem.digest).as_bytes()));
    // Two instances given the same key at once: the second waits here for
    // the first to commit, then replays its record.
    store::lock_key(conn, tenant, &idem.operation, &idem.key)?;
    let stored = store::record(conn, tenant, &idem.operation, &idem.key)?;
    if let Some((digest, outcome)) = stored {
        if digest != idem.digest {
            return Ok(Outcome {
                result: Err(EngineError::IdempotencyMismatch),
                replayed: false,
            });
        }
        let result: std::result::Result<T, EngineError> = serde_json::from_str(&outcome)?;
        return Ok(Outcome {
            result,
            replayed: true,
        });
    }
    conn.execute_batch("SAVEPOINT op")?;
    let result = op(conn);
    if result.is_err() {
        conn.execute_batch("ROLLBACK TO op")?;
    }
    conn.execute_batch("RELEASE op")?;
    let keep = match &result {
        Ok(_) => true,
        Err(e) => e.is_replayable(),
    };
    if keep {
        let stored: std::result::Result<&T, &EngineError> = result.as_ref();
        store::keep(
            conn,
            tenant,
            &idem.operation,
            &idem.key,
            &idem.digest,
            &serde_json::to_string(&stored)?,
            crate::clock::SystemClock.now_ms(),
        )?;
    }
    Ok(Outcome {
        result,
        replayed: false,
    })
}
