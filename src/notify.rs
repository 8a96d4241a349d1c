//! Who is told about an interrupt.
//!
//! `audience` is a notification hint only (it never makes anyone eligible):
//! when it is present, the people it names are the ones told. When it is
//! absent, the people who may decide are told:
//!
//! - an approval gate with eligibility refs: the union of its
//!   `approversList`, `approverGroupRefs` and `approverRoleRefs`, less the
//!   run's owner where the gate refuses self-approval;
//! - an approval gate without refs, and every other kind (anyone of the
//!   tenant who holds `approvals:respond` may decide those): the tenant's
//!   people, less the run's owner.
//!
//! Only people with an email address are told, and only people of the
//! interrupt's own tenant (exactly: `acme` is not `acmf`). Every person (a
//! console password or an email address) holds `approvals:respond`, so the
//! tenant's principals with an address are exactly its holders of
//! `approvals:respond` who can be mailed.
//!
//! What a recipient's link may do is decided separately, at delivery, by the
//! rule every surface uses (`Engine::mail_link_for`): someone told only
//! because `audience` names them gets a view-only link.

use crate::approval::ApprovalRules;
use crate::directory::Principal;
use serde_json::Value;
use tollgate_wire::InterruptKind;

/// What decides who is told about one interrupt.
#[derive(Debug, Clone, Copy)]
pub struct Notice<'a> {
    /// The run's tenant.
    pub tenant: &'a str,
    pub kind: InterruptKind,
    /// The approval gate's stored rules (`None` for other kinds).
    pub rules: Option<&'a ApprovalRules>,
    /// `data.audience`, when given.
    pub audience: Option<&'a Value>,
    /// Whose request this is (`RunRow::requester`: the person the run is
    /// for, else its owner). Never told (but through `audience`): they may
    /// not decide on their own request.
    pub requester: &'a str,
}

impl Notice<'_> {
    /// Whether the eligibility refs (not `audience`) decide who is told.
    fn by_refs(&self) -> Option<&ApprovalRules> {
        self.rules.filter(|r| {
            self.kind == InterruptKind::Approval
                && !(r.approvers_list.is_empty()
                    && r.approver_group_refs.is_empty()
                    && r.approver_role_refs.is_empty())
        })
    }
}

/// The principals of `directory` (the tenant's principals with an email
/// address) to notify about an interrupt, in directory order.
pub fn recipients(notice: &Notice<'_>, directory: &[Principal]) -> Vec<Principal> {
    let list = |key: &str| -> Vec<&str> {
        notice
            .audience
            .and_then(|a| a.get(key))
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    };
    // Read once, asked of every person.
    let audience = notice
        .audience
        .filter(|a| a.is_object())
        .map(|_| (list("subjects"), list("groups"), list("roles")));
    let told = |p: &Principal| -> bool {
        if let Some((subjects, groups, roles)) = &audience {
            return subjects.iter().any(|s| crate::directory::names(s, &p.id))
                || p.groups.iter().any(|g| groups.contains(&g.as_str()))
                || p.roles.iter().any(|r| roles.contains(&r.as_str()));
        }
        match notice.by_refs() {
            // A person holds approvals:respond; the rules decide the rest
            // (the refs, and the owner where self-approval is refused).
            Some(rules) => p.id != notice.requester && rules.admits(p, &[notice.requester], true),
            None => p.id != notice.requester,
        }
    };
    directory
        .iter()
        .filter(|p| p.tenant == notice.tenant)
        .filter(|p| p.email.as_deref().is_some_and(|e| !e.is_empty()))
        .filter(|p| told(p))
        .cloned()
        .collect()
}

/// Those told, and the delegates of those told: whoever handed their
/// decisions to someone (`delegations`: live (delegator, delegate) pairs)
/// has that someone told too — once, with an address, never about their
/// own request. The delegate's own eligibility is decided when they vote.
pub fn with_delegates(
    told: Vec<Principal>,
    delegations: &[(String, String)],
    directory: &[Principal],
    requester: &str,
) -> Vec<Principal> {
    let mut out = told;
    for (delegator, delegate) in delegations {
        if delegate == requester
            || !out.iter().any(|p| p.id == *delegator)
            || out.iter().any(|p| p.id == *delegate)
        {
            continue;
        }
        if let Some(p) = directory.iter().find(|p| p.id == *delegate) {
            out.push(p.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(id: &str, email: Option<&str>, groups: &[&str], roles: &[&str]) -> Principal {
        in_tenant("t", id, email, groups, roles)
    }

    fn in_tenant(tenant: &str, id: &str, email: Option<&str>, groups: &[&str], roles: &[&str]) -> Principal {
        Principal {
            id: id.into(),
            tenant: tenant.into(),
            name: id.into(),
            email: email.map(String::from),
            groups: groups.iter().map(|s| s.to_string()).collect(),
            roles: roles.iter().map(|s| s.to_string()).collect(),
            is_override: false,
        }
    }

    fn ids(v: Vec<Principal>) -> Vec<String> {
        v.into_iter().map(|p| p.id).collect()
    }

    fn notice<'a>(
        kind: InterruptKind,
        rules: Option<&'a ApprovalRules>,
        audience: Option<&'a Value>,
        owner: &'a str,
    ) -> Notice<'a> {
        Notice {
            tenant: "t",
            kind,
            rules,
            audience,
            requester: owner,
        }
    }

    #[test]
    fn a_delegate_is_told_with_the_delegator_once_and_never_about_their_own_request() {
        let dir = directory();
        let told = vec![dir[0].clone()]; // ann
        let pairs = [
            ("ann".to_string(), "dan".to_string()),
            ("ann".to_string(), "bob".to_string()),
            ("bob".to_string(), "own".to_string()), // bob was not told himself
            ("ann".to_string(), "nobody".to_string()),
        ];
        assert_eq!(
            ids(with_delegates(told.clone(), &pairs, &dir, "own")),
            ["ann", "dan", "bob"]
        );
        // The requester is never told about their own request, and nobody twice.
        let twice = [
            ("ann".to_string(), "dan".to_string()),
            ("ann".to_string(), "dan".to_string()),
        ];
        assert_eq!(
            ids(with_delegates(told.clone(), &twice, &dir, "own")),
            ["ann", "dan"]
        );
        assert_eq!(ids(with_delegates(told, &twice, &dir, "dan")), ["ann"]);
    }

    fn directory() -> Vec<Principal> {
        vec![
            p("ann", Some("ann@x"), &["finance"], &[]),
            p("bob", Some("bob@x"), &[], &["cfo"]),
            p("cat", None, &["finance"], &[]),
            p("dan", Some("dan@x"), &["ops"], &[]),
            p("own", Some("own@x"), &["finance"], &[]),
        ]
    }

    #[test]
    fn without_audience_the_union_of_the_eligibility_refs_is_told() {
        let dir = directory();
        let rules = ApprovalRules::from_config(
            &json!({"actions": ["accept"], "approverGroupRefs": ["finance"], "approverRoleRefs": ["cfo"]}),
        )
        .unwrap();
        assert_eq!(
            ids(recipients(
                &notice(InterruptKind::Approval, Some(&rules), None, "nobody"),
                &dir
            )),
            ["ann", "bob", "own"],
            "no address, no mail"
        );
        // The person whose request it is is never told, even where the gate
        // would let them approve it alone…
        assert_eq!(
            ids(recipients(
                &notice(InterruptKind::Approval, Some(&rules), None, "own"),
                &dir
            )),
            ["ann", "bob"]
        );
        // …nor where the gate refuses self-approval.
        let strict = ApprovalRules::from_config(
            &json!({"actions": ["accept"], "approverGroupRefs": ["finance"], "preventSelfApproval": true}),
        )
        .unwrap();
        assert_eq!(
            ids(recipients(
                &notice(InterruptKind::Approval, Some(&strict), None, "own"),
                &dir
            )),
            ["ann"]
        );
        let listed = ApprovalRules::from_config(
            &json!({"actions": ["accept"], "approversList": ["tollgate:dan", "bob"]}),
        )
        .unwrap();
        assert_eq!(
            ids(recipients(
                &notice(InterruptKind::Approval, Some(&listed), None, "own"),
                &dir
            )),
            ["bob", "dan"]
        );
    }

    #[test]
    fn an_audience_overrides_the_refs_for_notification() {
        let dir = directory();
        let rules =
            ApprovalRules::from_config(&json!({"actions": ["accept"], "approverGroupRefs": ["finance"]}))
                .unwrap();
        let audience = json!({"groups": ["ops"]});
        assert_eq!(
            ids(recipients(
                &notice(InterruptKind::Approval, Some(&rules), Some(&audience), "own"),
                &dir
            )),
            ["dan"]
        );
        // An audience names whom it names, the owner included; subjects, groups and roles add up.
        let audience = json!({"subjects": ["own", "tollgate:cat"], "roles": ["cfo"]});
        assert_eq!(
            ids(recipients(
                &notice(InterruptKind::Approval, Some(&rules), Some(&audience), "own"),
                &dir
            )),
            ["bob", "own"],
            "cat has no address"
        );
        // An empty audience tells nobody.
        let empty = json!({});
        assert!(recipients(
            &notice(InterruptKind::Approval, Some(&rules), Some(&empty), "own"),
            &dir
        )
        .is_empty());
    }

    #[test]
    fn a_gate_without_refs_and_other_kinds_tell_the_tenants_people_but_the_owner() {
        let dir = directory();
        let open = ApprovalRules::from_config(&json!({"actions": ["accept"]})).unwrap();
        assert_eq!(
            ids(recipients(
                &notice(InterruptKind::Approval, Some(&open), None, "own"),
                &dir
            )),
            ["ann", "bob", "dan"]
        );
        for kind in [
            InterruptKind::Clarification,
            InterruptKind::ExternalEvent,
            InterruptKind::Custom,
            InterruptKind::ConversationStart,
            InterruptKind::ConversationExchange,
            InterruptKind::ConversationClose,
            InterruptKind::LowConfidence,
            InterruptKind::Credential,
        ] {
            assert_eq!(
                ids(recipients(&notice(kind, None, None, "own"), &dir)),
                ["ann", "bob", "dan"],
                "{kind:?}"
            );
            let audience = json!({"subjects": ["dan"]});
            assert_eq!(
                ids(recipients(&notice(kind, None, Some(&audience), "own"), &dir)),
                ["dan"],
                "{kind:?}"
            );
        }
    }

    #[test]
    fn nobody_of_another_tenant_is_told() {
        let dir = vec![
            in_tenant("acme", "a1", Some("a1@x"), &["finance"], &[]),
            in_tenant("acmf", "f1", Some("f1@x"), &["finance"], &[]),
            in_tenant("ACME", "c1", Some("c1@x"), &["finance"], &[]),
        ];
        let rules =
            ApprovalRules::from_config(&json!({"actions": ["accept"], "approverGroupRefs": ["finance"]}))
                .unwrap();
        let open = ApprovalRules::from_config(&json!({"actions": ["accept"]})).unwrap();
        let audience = json!({"subjects": ["a1", "f1", "c1"]});
        for (rules, audience) in [(&rules, None), (&open, None), (&open, Some(&audience))] {
            let n = Notice {
                tenant: "acme",
                kind: InterruptKind::Approval,
                rules: Some(rules),
                audience,
                requester: "o",
            };
            assert_eq!(ids(recipients(&n, &dir)), ["a1"]);
        }
    }
}
