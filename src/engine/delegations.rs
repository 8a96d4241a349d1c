//! Delegation and reassignment (the rules are in [`crate::delegation`]):
//! a person hands their decisions to another person of the tenant for a
//! period; an admin moves one pending approval's seat from one person to
//! another. Either way the delegate votes in the delegator's seat, checked
//! inside the resolve itself.

use super::*;
use crate::delegation::{check_reason, check_window};
use crate::store::changes::Change;
use crate::store::delegations::{DelegationRow, NewDelegationRow};
use tollgate_wire::delegation::{Delegation, DelegationState, ReassignedInterrupt};
use tollgate_wire::MailReason;

/// At most this many delegations in one listing.
pub const DELEGATIONS_LISTED: i64 = 200;

/// A delegation asked for: `delegator` defaults to the caller (only an admin
/// names someone else); times are RFC 3339, `starts_at` defaulting to now.
#[derive(Debug, Clone, Default)]
pub struct NewDelegation {
    pub delegator: Option<String>,
    pub delegate: String,
    pub starts_at: Option<String>,
    pub ends_at: Option<String>,
    pub reason: Option<String>,
}

fn instant(field: &str, text: &str) -> Result<Millis> {
    chrono::DateTime::parse_from_rfc3339(text.trim())
        .map(|d| d.timestamp_millis())
        .map_err(|e| EngineError::validation(field, format!("{field}: not an RFC 3339 date-time ({e})")))
}

impl Engine {
    /// A person of the actor's tenant who can act (a console password or an
    /// address); the same 400 for another tenant's id as for an unknown one.
    async fn person_of_tenant(&self, actor: &Actor, field: &str, id: &str) -> Result<Principal> {
        let id = id.trim();
        if id.is_empty() {
            return Err(EngineError::validation(field, format!("{field} is required")));
        }
        // Named back only when it could be an id (no control characters, not
        // huge); what cannot be one is nobody, on either store, unread.
        let could_be_id = id.chars().count() <= 128 && !id.chars().any(char::is_control);
        let shown = if could_be_id {
            format!(" {id:?}")
        } else {
            String::new()
        };
        let unknown = || EngineError::validation(field, format!("{field}: no person{shown} in this tenant"));
        if !could_be_id {
            return Err(unknown());
        }
        let p = self
            .principal(id)
            .await?
            .filter(|p| p.tenant == actor.tenant())
            .ok_or_else(unknown)?;
        if self.inner.store.is_person(&p.id).await? != Some(true) {
            return Err(EngineError::validation(
                field,
                format!("{field}: \"{id}\" is not a person (no console password or email address)"),
            ));
        }
        Ok(p)
    }

    /// Hands `delegator`'s decisions to `delegate` from `starts_at` until
    /// `ends_at` (required, at most 366 days). Needs `approvals:respond`;
    /// for someone else, `admin`.
    pub async fn delegate(&self, actor: &Actor, new: NewDelegation) -> Result<Delegation> {
        actor.require(Scope::ApprovalsRespond)?;
        let delegator_id = new
            .delegator
            .clone()
            .unwrap_or_else(|| actor.principal.id.clone());
        if delegator_id != actor.principal.id {
            actor.require(Scope::Admin).map_err(|_| {
                EngineError::Forbidden(
                    "only an admin hands someone else's decisions to another person".into(),
                )
            })?;
        }
        let delegator = self.person_of_tenant(actor, "delegator", &delegator_id).await?;
        let delegate = self.person_of_tenant(actor, "delegate", &new.delegate).await?;
        if delegate.id == delegator.id {
            return Err(EngineError::validation(
                "delegate",
                "delegate: a person cannot delegate to themselves",
            ));
        }
        let now = self.now();
        let starts_at = match new.starts_at.as_deref().filter(|s| !s.trim().is_empty()) {
            Some(s) => instant("startsAt", s)?.max(now),
            None => now,
        };
        let ends_at = match new.ends_at.as_deref().filter(|s| !s.trim().is_empty()) {
            Some(s) => instant("endsAt", s)?,
            None => {
                return Err(EngineError::validation(
                    "endsAt",
                    "endsAt is required (when the delegation ends)",
                ))
            }
        };
        check_window(starts_at, ends_at, now)?;
        let reason = check_reason(new.reason)?;
        let id = ids::new_opaque();
        let (tenant, by) = (actor.tenant().to_string(), actor.principal.id.clone());
        let row_id = id.clone();
        self.inner
            .store
            .write(move |conn| {
                crate::store::delegations::insert(
                    conn,
                    &NewDelegationRow {
                        delegation_id: &row_id,
                        tenant: &tenant,
                        delegator: &delegator.id,
                        delegate: &delegate.id,
                        starts_at,
                        ends_at: Some(ends_at),
                        interrupt_id: None,
                        reason: reason.as_deref(),
                        created_by: &by,
                        created_at: now,
                    },
                )
            })
            .await?;
        self.delegation(actor, &id).await
    }

    /// Moves `from`'s seat on the pending approval at `node_id` to `to` (an
    /// admin's reassignment): `to` may then vote in `from`'s place on that
    /// interrupt only, until it closes, and is mailed a link. `from` must be
    /// one the gate admits; `to` a person of the tenant whose request it is not.
    pub async fn reassign(
        &self,
        actor: &Actor,
        run_id: &RunId,
        node_id: &str,
        from: &str,
        to: &str,
        reason: Option<String>,
    ) -> Result<Delegation> {
        actor.require(Scope::Admin)?;
        let view = self.inspect_interrupt(run_id, node_id, actor).await?;
        if view.status != InterruptStatus::Pending {
            return Err(EngineError::AlreadyResolved(format!(
                "the interrupt on \"{node_id}\" is {}",
                view.status
            )));
        }
        if view.kind != InterruptKind::Approval {
            return Err(EngineError::Conflict(format!(
                "only approvals have seats to reassign; anyone of the tenant may answer a {}",
                view.kind
            )));
        }
        let from = self.person_of_tenant(actor, "from", from).await?;
        let to = self.person_of_tenant(actor, "to", to).await?;
        if from.id == to.id {
            return Err(EngineError::validation("to", "to: the seat is already theirs"));
        }
        let requesters = self.requesters_of(run_id).await?;
        if requesters.contains(&to.id) {
            return Err(EngineError::validation(
                "to",
                format!("to: it is {}'s own request", to.id),
            ));
        }
        let (eligibility, _) = self.stored_rules(&view.interrupt_id).await?;
        let holds = self.holds_respond(&from.id).await?;
        super::inbox::eligible(view.kind, &eligibility, &requesters, &from, holds).map_err(|e| {
            EngineError::validation(
                "from",
                format!("from: {} has no seat on this gate ({e})", from.id),
            )
        })?;
        let reason = check_reason(reason)?;
        let now = self.now();
        let id = ids::new_opaque();
        let (tenant, by, row_id) = (actor.tenant().to_string(), actor.principal.id.clone(), id.clone());
        let (rid, nid, iid) = (
            run_id.clone(),
            NodeId::trusted(node_id),
            view.interrupt_id.clone(),
        );
        self.inner
            .store
            .write(move |conn| {
                crate::store::delegations::insert(
                    conn,
                    &NewDelegationRow {
                        delegation_id: &row_id,
                        tenant: &tenant,
                        delegator: &from.id,
                        delegate: &to.id,
                        starts_at: now,
                        ends_at: None,
                        interrupt_id: Some(&iid),
                        reason: reason.as_deref(),
                        created_by: &by,
                        created_at: now,
                    },
                )?;
                let Some(address) = to.email.clone().filter(|e| !e.is_empty()) else {
                    return Ok(());
                };
                crate::store::changes::apply(
                    conn,
                    vec![Change::Email {
                        reason: MailReason::Requested,
                        run_id: rid,
                        node_id: nid,
                        interrupt_id: iid.clone(),
                        recipient: to.id.clone(),
                        address: Some(address),
                        at: now,
                    }],
                )
            })
            .await?;
        self.delegation(actor, &id).await
    }

    /// Ends a delegation now: its delegator, its delegate or an admin may.
    /// 404 for one of another tenant or that the caller may not see; 409
    /// when it is already revoked.
    pub async fn revoke_delegation(&self, actor: &Actor, id: &str) -> Result<Delegation> {
        let d = self.delegation(actor, id).await?;
        if d.state == DelegationState::Revoked {
            return Err(EngineError::Conflict("this delegation is already revoked".into()));
        }
        let (tenant, id_owned, by, now) = (
            actor.tenant().to_string(),
            id.to_string(),
            actor.principal.id.clone(),
            self.now(),
        );
        let revoked = self
            .inner
            .store
            .write(move |conn| crate::store::delegations::revoke(conn, &tenant, &id_owned, &by, now))
            .await?;
        if !revoked {
            return Err(EngineError::Conflict("this delegation is already revoked".into()));
        }
        self.delegation(actor, id).await
    }

    /// One delegation the actor may see: one they gave or were given, or
    /// any of the tenant for an admin (404 otherwise, as for an unknown id).
    pub async fn delegation(&self, actor: &Actor, id: &str) -> Result<Delegation> {
        actor.require(Scope::RunsRead)?;
        let not_found = || EngineError::NotFound(format!("no delegation {id}"));
        let row = self
            .inner
            .store
            .delegation(actor.tenant(), id)
            .await?
            .ok_or_else(not_found)?;
        let me = &actor.principal.id;
        if !actor.allows(Scope::Admin) && row.delegator != *me && row.delegate != *me {
            return Err(not_found());
        }
        Ok(self.delegation_view(row))
    }

    /// The delegations the actor gave or was given, newest first; an admin
    /// with `all` sees the tenant's.
    pub async fn delegations(&self, actor: &Actor, all: bool) -> Result<Vec<Delegation>> {
        actor.require(Scope::RunsRead)?;
        let person = if all {
            actor.require(Scope::Admin)?;
            None
        } else {
            Some(actor.principal.id.as_str())
        };
        let rows = self
            .inner
            .store
            .delegations(actor.tenant(), person, DELEGATIONS_LISTED)
            .await?;
        Ok(rows.into_iter().map(|r| self.delegation_view(r)).collect())
    }

    /// The live delegations to `principal` now: the people whose decisions
    /// they take, and the interrupts reassigned to them that are still pending.
    pub async fn delegated_to(&self, principal: &Principal) -> Result<Vec<Delegation>> {
        let rows = self
            .inner
            .store
            .delegations_to(&principal.tenant, &principal.id, self.now())
            .await?;
        Ok(rows.into_iter().map(|r| self.delegation_view(r)).collect())
    }

    /// The people of the actor's tenant a decision can be handed to
    /// (id, name): everyone but the actor with a console password or an
    /// address, by id.
    pub async fn colleagues(&self, actor: &Actor) -> Result<Vec<(String, String)>> {
        actor.require(Scope::ApprovalsRespond)?;
        Ok(self
            .persons_of(actor.tenant())
            .await?
            .into_iter()
            .filter(|p| p.id != actor.principal.id)
            .map(|p| (p.id, p.name))
            .collect())
    }

    fn delegation_view(&self, r: DelegationRow) -> Delegation {
        let now = self.now();
        let status = r
            .interrupt_status
            .as_deref()
            .and_then(|s| s.parse::<InterruptStatus>().ok());
        let closed = r.interrupt_id.is_some() && status != Some(InterruptStatus::Pending);
        let state = if r.revoked_at.is_some() {
            DelegationState::Revoked
        } else if closed || r.ends_at.is_some_and(|e| e <= now) {
            DelegationState::Ended
        } else if r.starts_at > now {
            DelegationState::Upcoming
        } else {
            DelegationState::Active
        };
        let interrupt = match (r.run_id, r.node_id) {
            (Some(run_id), Some(node_id)) => Some(ReassignedInterrupt {
                run_id,
                node_id,
                title: r.title.unwrap_or_default(),
            }),
            _ => None,
        };
        Delegation {
            delegator_name: r.delegator_name.unwrap_or_else(|| r.delegator.clone()),
            delegate_name: r.delegate_name.unwrap_or_else(|| r.delegate.clone()),
            delegation_id: r.delegation_id,
            delegator: r.delegator,
            delegate: r.delegate,
            starts_at: rfc3339(r.starts_at),
            ends_at: r.ends_at.map(rfc3339),
            interrupt,
            reason: r.reason,
            created_by: r.created_by,
            created_at: rfc3339(r.created_at),
            revoked_at: r.revoked_at.map(rfc3339),
            revoked_by: r.revoked_by,
            state,
        }
    }
}
