//! The directory's statements: principals, API keys (by digest), revoked
//! token ids. Stored scopes and group lists are decoded here once, with an
//! error naming the column; nothing falls back to "no scopes".

use super::{Store, WriteConn};
use crate::args;
use crate::auth::{self, Grant, Scope};
use crate::clock::Millis;
use crate::directory::{principal_from_columns, Principal};
use crate::error::{EngineError, Result};
use std::collections::HashMap;

/// 1 for a person (a console password or an email address: they sign in,
/// or receive links), 0 for a service principal; over `principals` with
/// the column prefix given (`""` or an alias such as `"p."`).
macro_rules! is_person {
    ($prefix:literal) => {
        concat!(
            "CASE WHEN ",
            $prefix,
            "password_hash IS NOT NULL OR COALESCE(",
            $prefix,
            "email, '') <> '' THEN 1 ELSE 0 END"
        )
    };
}
const IS_PERSON: &str = is_person!("");
/// [`IS_PERSON`] over `principals p`.
pub(crate) const IS_PERSON_P: &str = is_person!("p.");

// A principal's keys, and a tenant's, each by the index of keys by principal
// (asserted on SQLite's plans in `store::sqlite`'s tests).
pub(super) const LIVE_KEY_SCOPES_SQL: &str =
    "SELECT scopes FROM api_keys WHERE principal = ? AND revoked_at IS NULL";
pub(super) const TENANT_LIVE_KEYS_SQL: &str = "SELECT k.principal, k.scopes FROM api_keys k \
     JOIN principals p ON p.id = k.principal WHERE p.tenant = ? AND k.revoked_at IS NULL";

fn stored_scopes(column: &str, text: String) -> Result<Vec<Scope>> {
    auth::parse_scopes(&[text]).map_err(|e| EngineError::Storage(format!("{column}: {e}")))
}

/// Whether saving a principal may move its id from another tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IdOwner {
    /// The operator's directory (configuration, CLI): the entry is replaced whole.
    AnyTenant,
    /// A tenant's own admin: an id another tenant holds is refused, in the
    /// same statement that writes (no window between a check and the write).
    SameTenant,
}

const UPSERT_PRINCIPAL: &str = "INSERT INTO principals (id, tenant, name, email, groups, roles, is_override) VALUES (?, ?, ?, ?, ?, ?, ?) \
     ON CONFLICT (id) DO UPDATE SET tenant = excluded.tenant, name = excluded.name, email = excluded.email, groups = excluded.groups, roles = excluded.roles, is_override = excluded.is_override";
const UPSERT_TENANT_PRINCIPAL: &str = "INSERT INTO principals (id, tenant, name, email, groups, roles, is_override) VALUES (?, ?, ?, ?, ?, ?, ?) \
     ON CONFLICT (id) DO UPDATE SET name = excluded.name, email = excluded.email, groups = excluded.groups, roles = excluded.roles, is_override = excluded.is_override \
     WHERE principals.tenant = excluded.tenant";

/// Creates or replaces a principal; with [`IdOwner::SameTenant`], an id
/// another tenant holds is a conflict and nothing is written.
pub(crate) fn upsert_principal(conn: &WriteConn, p: &Principal, owner: IdOwner) -> Result<()> {
    let sql = match owner {
        IdOwner::AnyTenant => UPSERT_PRINCIPAL,
        IdOwner::SameTenant => UPSERT_TENANT_PRINCIPAL,
    };
    let written = conn.execute(
        sql,
        args![
            p.id,
            p.tenant,
            p.name,
            p.email,
            serde_json::to_string(&p.groups)?,
            serde_json::to_string(&p.roles)?,
            p.is_override as i64
        ],
    )?;
    if written == 0 {
        // Ids are one namespace across tenants; say it is taken, never whose it is.
        return Err(EngineError::Conflict(format!(
            "the id \"{}\" is already taken; choose another",
            p.id
        )));
    }
    Ok(())
}

/// Stores a key's digest with its grant; a revoked key stays revoked.
pub(crate) fn put_api_key(
    conn: &WriteConn,
    hash: &str,
    principal: &str,
    scopes: &[Scope],
    label: Option<&str>,
    now: Millis,
) -> Result<()> {
    let scope_text = scopes.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" ");
    conn.execute(
        "INSERT INTO api_keys (key_hash, principal, scopes, label, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, NULL) \
         ON CONFLICT (key_hash) DO UPDATE SET principal = excluded.principal, scopes = excluded.scopes, label = excluded.label",
        args![hash, principal, scope_text, label, now],
    )?;
    Ok(())
}

/// Stores a new key's digest for a principal of `tenant`: written only if
/// the principal is of that tenant as the statement runs (their id may have
/// moved to another tenant since it was checked). Returns the rows written.
pub(crate) fn insert_tenant_api_key(
    conn: &WriteConn,
    tenant: &str,
    hash: &str,
    principal: &str,
    scopes: &[Scope],
    label: Option<&str>,
    now: Millis,
) -> Result<usize> {
    let scope_text = scopes.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" ");
    conn.execute(
        "INSERT INTO api_keys (key_hash, principal, scopes, label, created_at, revoked_at) \
         SELECT ?, ?, ?, ?, ?, NULL WHERE EXISTS (SELECT 1 FROM principals WHERE id = ? AND tenant = ?)",
        args![hash, principal, scope_text, label, now, principal, tenant],
    )
}

/// Puts a token id on the revocation list (again is a no-op).
pub(crate) fn revoke_token(conn: &WriteConn, jti: &str, now: Millis) -> Result<()> {
    conn.execute(
        "INSERT INTO revoked_tokens (jti, revoked_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
        args![jti, now],
    )?;
    Ok(())
}

/// Sets (or, with `None`, clears) a principal's password hash — only in
/// `tenant` when one is given (a tenant admin's act). When the hash changes
/// the password generation becomes a new random value, ending the
/// principal's sessions: random, not counted, so a session of a removed
/// person never matches whoever is later given the same id (a count would
/// start again at the same numbers). Returns the rows changed (0: no such
/// principal, or not in `tenant`).
pub(crate) fn set_password(
    conn: &WriteConn,
    id: &str,
    tenant: Option<&str>,
    phc: Option<&str>,
) -> Result<usize> {
    macro_rules! set {
        () => {
            "UPDATE principals SET password_generation = \
             CASE WHEN password_hash IS DISTINCT FROM ?1 THEN ?2 ELSE password_generation END, \
             password_hash = ?1 WHERE id = ?3"
        };
    }
    let generation = new_generation();
    match tenant {
        None => conn.execute(set!(), args![phc, generation, id]),
        Some(t) => conn.execute(concat!(set!(), " AND tenant = ?4"), args![phc, generation, id, t]),
    }
}

/// A password generation no earlier one of any principal is likely to
/// have had (63 random bits; never 0, a new row's).
fn new_generation() -> i64 {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).expect("the operating system's random source");
    (i64::from_le_bytes(bytes) & i64::MAX).max(1)
}

/// Removes a principal with their keys, and revokes the delegations they
/// gave or were given; false when there was no such principal. Nothing of
/// theirs outlives them: a person later given the same id (in this tenant
/// or another) inherits no key and no seat.
pub(crate) fn remove_principal(conn: &WriteConn, id: &str, now: Millis) -> Result<bool> {
    conn.execute(
        "UPDATE delegations SET revoked_at = ?, revoked_by = ? WHERE revoked_at IS NULL \
         AND (delegator = ? OR delegate = ?) AND tenant = (SELECT tenant FROM principals WHERE id = ?)",
        args![now, REMOVED_BY, id, id, id],
    )?;
    conn.execute("DELETE FROM api_keys WHERE principal = ?", args![id])?;
    Ok(conn.execute("DELETE FROM principals WHERE id = ?", args![id])? > 0)
}

/// Who revoked a delegation its delegator or delegate was removed from the directory.
pub(crate) const REMOVED_BY: &str = "directory: person removed";

/// A principal as the command sees the directory now (inside a resolve:
/// after the run's lock, so a change committed while it waited is seen).
pub(crate) fn principal_now(conn: &WriteConn, id: &str) -> Result<Option<Principal>> {
    conn.query_opt(
        "SELECT id, tenant, name, email, groups, roles, is_override FROM principals WHERE id = ?",
        args![id],
        principal_of_row,
    )
}

/// A principal from a row of (id, tenant, name, email, groups, roles, is_override).
pub(crate) fn principal_of_row(r: &super::Row) -> Result<Principal> {
    let (groups, roles): (String, String) = (r.get(4)?, r.get(5)?);
    let is_override: i64 = r.get(6)?;
    principal_from_columns(
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        &groups,
        &roles,
        is_override != 0,
    )
}

/// The digests of a principal's keys, read inside a command.
pub(crate) fn key_hashes(conn: &WriteConn, id: &str) -> Result<Vec<String>> {
    conn.query_map(
        "SELECT key_hash FROM api_keys WHERE principal = ?",
        args![id],
        |r| r.get(0),
    )
}

impl Store {
    /// The password generation of a principal who has a password (`None`
    /// without one, or without such a principal); the hash is not read.
    pub(crate) async fn password_generation(&self, id: &str) -> Result<Option<i64>> {
        let row: Option<(i64, i64)> = sqlx::query_as(&self.q(
            "SELECT CASE WHEN password_hash IS NOT NULL THEN 1 ELSE 0 END, password_generation FROM principals WHERE id = ?",
        ))
        .bind(id)
        .fetch_optional(&self.read)
        .await?;
        Ok(row.and_then(|(has, g)| (has != 0).then_some(g)))
    }

    /// A principal's password hash and password generation (`None`: no such principal).
    pub(crate) async fn credentials(&self, id: &str) -> Result<Option<(Option<String>, i64)>> {
        Ok(
            sqlx::query_as(&self.q("SELECT password_hash, password_generation FROM principals WHERE id = ?"))
                .bind(id)
                .fetch_optional(&self.read)
                .await?,
        )
    }

    pub(crate) async fn principal(&self, id: &str) -> Result<Option<Principal>> {
        let row: Option<(String, String, Option<String>, String, String, i64)> = sqlx::query_as(
            &self.q("SELECT tenant, name, email, groups, roles, is_override FROM principals WHERE id = ?"),
        )
        .bind(id)
        .fetch_optional(&self.read)
        .await?;
        row.map(|(tenant, name, email, groups, roles, o)| {
            principal_from_columns(id.to_string(), tenant, name, email, &groups, &roles, o != 0)
        })
        .transpose()
    }

    /// The grant of a live key (`None` if unknown or revoked).
    pub(crate) async fn grant(&self, hash: &str) -> Result<Option<Grant>> {
        let row: Option<(String, String)> = sqlx::query_as(
            &self.q("SELECT principal, scopes FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL"),
        )
        .bind(hash)
        .fetch_optional(&self.read)
        .await?;
        row.map(|(principal_id, scopes)| {
            Ok(Grant {
                scopes: stored_scopes("api_keys.scopes", scopes)?,
                principal_id,
            })
        })
        .transpose()
    }

    /// Whether the principal is a person (has a console password or an
    /// email address); `None` when there is no such principal.
    pub(crate) async fn is_person(&self, id: &str) -> Result<Option<bool>> {
        let person: Option<i64> =
            sqlx::query_scalar(&self.q(&format!("SELECT {IS_PERSON} FROM principals WHERE id = ?")))
                .bind(id)
                .fetch_optional(&self.read)
                .await?;
        Ok(person.map(|p| p != 0))
    }

    /// A tenant's principals by name, each with whether they are a person
    /// (as [`Store::is_person`] says): one statement, however many.
    pub(crate) async fn tenant_people(&self, tenant: &str) -> Result<Vec<(Principal, bool)>> {
        type Columns = (String, String, Option<String>, String, String, i64, i64);
        let rows: Vec<Columns> = sqlx::query_as(&self.q(&format!(
            "SELECT id, name, email, groups, roles, is_override, {IS_PERSON} \
             FROM principals WHERE tenant = ? ORDER BY name, id"
        )))
        .bind(tenant)
        .fetch_all(&self.read)
        .await?;
        rows.into_iter()
            .map(|(id, name, email, groups, roles, o, is_person)| {
                let p = principal_from_columns(id, tenant.to_string(), name, email, &groups, &roles, o != 0)?;
                Ok((p, is_person != 0))
            })
            .collect()
    }

    /// The scopes of each live key of a tenant's principals, by principal
    /// (as [`Store::live_key_scopes`] reads one principal's): one statement.
    pub(crate) async fn tenant_live_keys(&self, tenant: &str) -> Result<HashMap<String, Vec<Vec<Scope>>>> {
        let live: Vec<(String, String)> = sqlx::query_as(&self.q(TENANT_LIVE_KEYS_SQL))
            .bind(tenant)
            .fetch_all(&self.read)
            .await?;
        let mut keys: HashMap<String, Vec<Vec<Scope>>> = HashMap::new();
        for (principal, scopes) in live {
            keys.entry(principal)
                .or_default()
                .push(stored_scopes("api_keys.scopes", scopes)?);
        }
        Ok(keys)
    }

    /// The scopes of each of the principal's live keys.
    pub(crate) async fn live_key_scopes(&self, principal: &str) -> Result<Vec<Vec<Scope>>> {
        let keys: Vec<String> = sqlx::query_scalar(&self.q(LIVE_KEY_SCOPES_SQL))
            .bind(principal)
            .fetch_all(&self.read)
            .await?;
        keys.into_iter()
            .map(|k| stored_scopes("api_keys.scopes", k))
            .collect()
    }
}
