//! The delegations' statements. Every read names the tenant, so an id of
//! another tenant finds nothing.

use super::directory::IS_PERSON_P as IS_PERSON;
use super::{Store, WriteConn};
use crate::args;
use crate::clock::Millis;
use crate::directory::Principal;
use crate::error::Result;
use std::sync::LazyLock;

/// A delegation as stored, with the people's names and, for a reassignment,
/// its interrupt's run, node, title and status.
#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct DelegationRow {
    pub delegation_id: String,
    pub delegator: String,
    pub delegator_name: Option<String>,
    pub delegate: String,
    pub delegate_name: Option<String>,
    pub starts_at: Millis,
    pub ends_at: Option<Millis>,
    pub interrupt_id: Option<String>,
    pub run_id: Option<String>,
    pub node_id: Option<String>,
    pub title: Option<String>,
    pub interrupt_status: Option<String>,
    pub reason: Option<String>,
    pub created_by: String,
    pub created_at: Millis,
    pub revoked_at: Option<Millis>,
    pub revoked_by: Option<String>,
}

/// A new delegation, checked by the engine.
pub(crate) struct NewDelegationRow<'a> {
    pub delegation_id: &'a str,
    pub tenant: &'a str,
    pub delegator: &'a str,
    pub delegate: &'a str,
    pub starts_at: Millis,
    pub ends_at: Option<Millis>,
    pub interrupt_id: Option<&'a str>,
    pub reason: Option<&'a str>,
    pub created_by: &'a str,
    pub created_at: Millis,
}

/// Live at `now`: not revoked, started, not ended.
const LIVE: &str = "d.revoked_at IS NULL AND d.starts_at <= ? AND (d.ends_at IS NULL OR d.ends_at > ?)";

/// [`delegators_of`]'s statement: a delegator lends their seat only while
/// they still are a person (as when the delegation was made), so one who
/// can no longer decide cannot through a delegate either.
static DELEGATORS_OF: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT p.id, p.tenant, p.name, p.email, p.groups, p.roles, p.is_override \
         FROM delegations d JOIN principals p ON p.id = d.delegator AND p.tenant = d.tenant \
         WHERE d.tenant = ? AND d.delegate = ? AND {LIVE} AND (d.interrupt_id IS NULL OR d.interrupt_id = ?) \
         AND {IS_PERSON} = 1 \
         ORDER BY d.interrupt_id IS NULL, d.created_at, d.delegation_id"
    )
});

/// [`live_pairs`]' statement.
static LIVE_PAIRS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT d.delegator, d.delegate FROM delegations d WHERE d.tenant = ? AND d.interrupt_id IS NULL AND {LIVE} \
         ORDER BY d.created_at, d.delegation_id"
    )
});

/// The people whose seat `caster` may take on `interrupt_id` at `now`: a
/// reassignment of this interrupt first, then in the order the delegations were made (inside a resolve command, so a
/// revocation committed before the vote is seen).
pub(crate) fn delegators_of(
    conn: &WriteConn,
    caster: &Principal,
    interrupt_id: &str,
    now: Millis,
) -> Result<Vec<Principal>> {
    conn.query_map(
        &DELEGATORS_OF,
        args![caster.tenant, caster.id, now, now, interrupt_id],
        super::directory::principal_of_row,
    )
}

/// The tenant's live whole-period delegations at `now` as (delegator,
/// delegate), for telling delegates about new requests.
pub(crate) fn live_pairs(conn: &WriteConn, tenant: &str, now: Millis) -> Result<Vec<(String, String)>> {
    conn.query_map(&LIVE_PAIRS, args![tenant, now, now], |r| {
        Ok((r.get(0)?, r.get(1)?))
    })
}

pub(crate) fn insert(conn: &WriteConn, d: &NewDelegationRow) -> Result<()> {
    conn.execute(
        "INSERT INTO delegations (delegation_id, tenant, delegator, delegate, starts_at, ends_at, interrupt_id, reason, created_by, created_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        args![
            d.delegation_id,
            d.tenant,
            d.delegator,
            d.delegate,
            d.starts_at,
            d.ends_at,
            d.interrupt_id,
            d.reason,
            d.created_by,
            d.created_at
        ],
    )?;
    Ok(())
}

/// Revokes a delegation of the tenant that is not revoked yet; false when
/// there is none such.
pub(crate) fn revoke(conn: &WriteConn, tenant: &str, id: &str, by: &str, now: Millis) -> Result<bool> {
    Ok(conn.execute(
        "UPDATE delegations SET revoked_at = ?, revoked_by = ? WHERE tenant = ? AND delegation_id = ? AND revoked_at IS NULL",
        args![now, by, tenant, id],
    )? > 0)
}

/// The columns of [`DelegationRow`], over `delegations d`.
const ROW: &str = "SELECT d.delegation_id, d.delegator, a.name AS delegator_name, d.delegate, b.name AS delegate_name, \
    d.starts_at, d.ends_at, d.interrupt_id, i.run_id, i.node_id, i.title, i.status AS interrupt_status, d.reason, \
    d.created_by, d.created_at, d.revoked_at, d.revoked_by \
    FROM delegations d LEFT JOIN principals a ON a.id = d.delegator AND a.tenant = d.tenant \
    LEFT JOIN principals b ON b.id = d.delegate AND b.tenant = d.tenant \
    LEFT JOIN interrupts i ON i.interrupt_id = d.interrupt_id";

impl Store {
    /// A tenant's delegations, newest first; with `person`, only those they
    /// gave or were given.
    pub(crate) async fn delegations(
        &self,
        tenant: &str,
        person: Option<&str>,
        limit: i64,
    ) -> Result<Vec<DelegationRow>> {
        let whose = if person.is_some() {
            " AND (d.delegator = ? OR d.delegate = ?)"
        } else {
            ""
        };
        let sql = format!(
            "{ROW} WHERE d.tenant = ?{whose} ORDER BY d.created_at DESC, d.delegation_id DESC LIMIT ?"
        );
        let sql = self.q(&sql);
        let mut q = sqlx::query_as(&sql).bind(tenant);
        if let Some(p) = person {
            q = q.bind(p).bind(p);
        }
        Ok(q.bind(limit).fetch_all(&self.read).await?)
    }

    /// One delegation of the tenant.
    pub(crate) async fn delegation(&self, tenant: &str, id: &str) -> Result<Option<DelegationRow>> {
        let sql = format!("{ROW} WHERE d.tenant = ? AND d.delegation_id = ?");
        Ok(sqlx::query_as(&self.q(&sql))
            .bind(tenant)
            .bind(id)
            .fetch_optional(&self.read)
            .await?)
    }

    /// The live delegations to `delegate` at `now`: whole periods (`interrupt_id`
    /// none) and reassignments of interrupts still pending.
    pub(crate) async fn delegations_to(
        &self,
        tenant: &str,
        delegate: &str,
        now: Millis,
    ) -> Result<Vec<DelegationRow>> {
        let sql = format!(
            "{ROW} WHERE d.tenant = ? AND d.delegate = ? AND {LIVE} \
             AND (d.interrupt_id IS NULL OR i.status = 'pending') ORDER BY d.interrupt_id IS NULL, d.created_at, d.delegation_id"
        );
        Ok(sqlx::query_as(&self.q(&sql))
            .bind(tenant)
            .bind(delegate)
            .bind(now)
            .bind(now)
            .fetch_all(&self.read)
            .await?)
    }
}
