//! Delegation: whose seat a vote takes. A person may hand their decisions to
//! another person of the tenant for a period (out of office), and an admin
//! may move one pending interrupt's seat from one person to another (a
//! reassignment). The delegate then votes *in the delegator's seat*: quorum
//! still counts distinct seats, the seat's own vote and its delegate's
//! replace each other, and a person holds at most one counted vote per
//! interrupt. These are the pure rules; the engine loads the delegations.

use crate::approval::ApprovalRules;
use crate::clock::Millis;
use crate::directory::Principal;
use crate::error::{EngineError, Result};

/// The longest a delegation may run (a year): long enough for any leave,
/// short enough that a forgotten one ends.
pub const MAX_DELEGATION_MS: Millis = 366 * 24 * 60 * 60 * 1000;

/// At most this many characters of reason.
pub const REASON_MAX_CHARS: usize = 500;

/// Whose place a vote takes.
#[derive(Debug, Clone, PartialEq)]
pub struct Seat {
    /// The person whose vote this counts as (what quorum counts).
    pub holder: String,
    /// The ref that admits the holder (`group:…`, `principal:…`, …).
    pub via: String,
    /// The caster, when they vote in someone else's seat.
    pub cast_by: Option<String>,
    /// Only the holder's own vote can be an override; a delegate's never is.
    pub is_override: bool,
}

/// The seat `caster` votes in on an approval gate: their own when the rules
/// admit them, else the first delegator (in the order given) the rules
/// admit who has not voted themselves — a delegate never overrules the
/// person they stand in for (409 when that is all that is left).
/// `delegators` is asked only when the caster is not eligible themselves,
/// so an ordinary vote reads nothing more. A caster whose own request it is
/// never votes, for themselves or for anyone.
pub fn seat(
    rules: &ApprovalRules,
    caster: &Principal,
    requesters: &[impl AsRef<str>],
    holds_respond: bool,
    delegators: impl FnOnce() -> Result<Vec<Principal>>,
    voted_themselves: impl Fn(&str) -> bool,
) -> Result<Seat> {
    let own = match rules.eligibility(caster, requesters, holds_respond) {
        Ok(via) => {
            return Ok(Seat {
                holder: caster.id.clone(),
                via,
                cast_by: None,
                is_override: caster.is_override,
            })
        }
        Err(e) => e,
    };
    if !holds_respond || requesters.iter().any(|r| r.as_ref() == caster.id) {
        return Err(own);
    }
    let mut decided = None;
    for d in delegators()? {
        // Nobody votes for a delegator on the delegator's own request.
        if d.id == caster.id || d.tenant != caster.tenant || requesters.iter().any(|r| r.as_ref() == d.id) {
            continue;
        }
        if let Ok(via) = rules.eligibility(&d, requesters, holds_respond) {
            if voted_themselves(&d.id) {
                decided.get_or_insert(d.name);
                continue;
            }
            return Ok(Seat {
                holder: d.id,
                via,
                cast_by: Some(caster.id.clone()),
                is_override: false,
            });
        }
    }
    match decided {
        Some(name) => Err(EngineError::Conflict(format!(
            "{name} has voted on this themselves; a delegate does not replace their vote"
        ))),
        None => Err(own),
    }
}

/// The window of a new delegation, checked: it ends after it starts, after
/// `now`, and within [`MAX_DELEGATION_MS`] of `now` — so no string of
/// back-to-back delegations, or one starting years ahead, hands decisions
/// over for longer than that: each year's must be made within its year.
pub fn check_window(starts_at: Millis, ends_at: Millis, now: Millis) -> Result<()> {
    if ends_at <= starts_at {
        return Err(EngineError::validation("endsAt", "endsAt must be after startsAt"));
    }
    if ends_at <= now {
        return Err(EngineError::validation("endsAt", "endsAt is in the past"));
    }
    // Past `now` the window is never longer than this, wherever it starts.
    if ends_at - now > MAX_DELEGATION_MS {
        return Err(EngineError::validation(
            "endsAt",
            "a delegation ends at most 366 days from now",
        ));
    }
    Ok(())
}

/// A reason, trimmed; empty is none.
pub fn check_reason(reason: Option<String>) -> Result<Option<String>> {
    crate::text::optional_text(reason, "reason", REASON_MAX_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn person(id: &str, groups: &[&str]) -> Principal {
        Principal {
            id: id.into(),
            tenant: "acme".into(),
            name: id.into(),
            email: None,
            groups: groups.iter().map(|g| g.to_string()).collect(),
            roles: vec![],
            is_override: false,
        }
    }

    fn finance_gate() -> ApprovalRules {
        ApprovalRules::from_config(&json!({
            "actions": ["accept", "reject"],
            "approverGroupRefs": ["finance"],
            "requiredApprovals": 2,
            "preventSelfApproval": true
        }))
        .unwrap()
    }

    fn never() -> Result<Vec<Principal>> {
        panic!("delegations read for an eligible caster")
    }

    #[test]
    fn an_eligible_caster_votes_in_their_own_seat_without_reading_delegations() {
        let ann = person("ann", &["finance"]);
        let s = seat(&finance_gate(), &ann, &["ops"], true, never, |_| false).unwrap();
        assert_eq!(s.holder, "ann");
        assert_eq!(s.cast_by, None);
        assert_eq!(s.via, "group:finance");
    }

    #[test]
    fn a_delegate_votes_in_the_first_eligible_delegators_seat() {
        let dan = person("dan", &[]);
        let s = seat(
            &finance_gate(),
            &dan,
            &["ops"],
            true,
            || Ok(vec![person("eve", &["sales"]), person("ann", &["finance"])]),
            |_| false,
        )
        .unwrap();
        assert_eq!(s.holder, "ann");
        assert_eq!(s.cast_by.as_deref(), Some("dan"));
        assert_eq!(s.via, "group:finance");
        assert!(!s.is_override);
    }

    #[test]
    fn a_delegate_never_votes_on_their_own_request_nor_on_the_delegators() {
        let dan = person("dan", &[]);
        let ann = || Ok(vec![person("ann", &["finance"])]);
        let own = seat(&finance_gate(), &dan, &["dan"], true, ann, |_| false).unwrap_err();
        assert!(matches!(own, EngineError::Forbidden(_)), "{own}");
        let theirs = seat(&finance_gate(), &dan, &["ann"], true, ann, |_| false).unwrap_err();
        assert!(matches!(theirs, EngineError::Forbidden(_)), "{theirs}");
    }

    #[test]
    fn no_delegator_the_rules_admit_leaves_the_callers_own_refusal() {
        let dan = person("dan", &[]);
        let e = seat(
            &finance_gate(),
            &dan,
            &["ops"],
            true,
            || Ok(vec![person("eve", &["sales"])]),
            |_| false,
        )
        .unwrap_err();
        assert!(e.to_string().contains("dan is not an eligible approver"), "{e}");
        // Without approvals:respond a delegation does not help either.
        let e = seat(
            &finance_gate(),
            &dan,
            &["ops"],
            false,
            || Ok(vec![person("ann", &["finance"])]),
            |_| false,
        )
        .unwrap_err();
        assert!(matches!(e, EngineError::Forbidden(_)));
    }

    #[test]
    fn a_delegator_of_another_tenant_or_the_caster_themselves_is_ignored() {
        let dan = person("dan", &[]);
        let mut other = person("ann", &["finance"]);
        other.tenant = "acmf".into();
        assert!(seat(
            &finance_gate(),
            &dan,
            &["ops"],
            true,
            || Ok(vec![other.clone()]),
            |_| false
        )
        .is_err());
    }

    #[test]
    fn a_delegate_never_replaces_a_vote_the_delegator_cast_themselves() {
        let dan = person("dan", &[]);
        let both = || Ok(vec![person("ann", &["finance"]), person("bob", &["finance"])]);
        // Ann has voted: Dan takes Bob's seat instead.
        let s = seat(&finance_gate(), &dan, &["ops"], true, both, |id| id == "ann").unwrap();
        assert_eq!(s.holder, "bob");
        // Both have: nothing is left for Dan, and he is told why.
        let e = seat(&finance_gate(), &dan, &["ops"], true, both, |_| true).unwrap_err();
        assert!(matches!(e, EngineError::Conflict(_)), "{e}");
        assert!(e.to_string().contains("ann has voted on this themselves"), "{e}");
    }

    #[test]
    fn a_window_ends_after_it_starts_after_now_and_within_a_year() {
        assert!(check_window(0, 10, 5).is_ok());
        assert!(check_window(10, 10, 0).is_err());
        assert!(check_window(0, 5, 5).is_err());
        assert!(check_window(0, MAX_DELEGATION_MS + 1, 0).is_err());
        assert!(check_window(0, MAX_DELEGATION_MS, 0).is_ok());
        // The next year's, made now: refused, whatever its own length.
        let year = MAX_DELEGATION_MS;
        assert!(check_window(year, 2 * year, 0).is_err());
        assert!(check_window(10 * year, 10 * year + 1, 0).is_err());
        // Made within its year, it is fine.
        assert!(check_window(year, 2 * year, year + 1).is_ok());
        assert_eq!(check_reason(Some("  ".into())).unwrap(), None);
        assert!(check_reason(Some("x".repeat(501))).is_err());
    }
}
