//! Who is told about an interrupt. `audience` is a notification hint only;
//! when it is absent, the union of the eligibility refs is notified.

use crate::approval::ApprovalRules;
use crate::directory::Principal;
use serde_json::Value;

/// Principals (with an email address) to notify about an interrupt.
pub fn recipients(
    rules: Option<&ApprovalRules>,
    audience: Option<&Value>,
    directory: &[Principal],
) -> Vec<Principal> {
    let list = |v: Option<&Value>, key: &str| -> Vec<String> {
        v.and_then(|a| a.get(key))
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect())
            .unwrap_or_default()
    };
    let (subjects, groups, roles) = match (audience, rules) {
        (Some(a), _) if a.is_object() => (
            list(Some(a), "subjects"),
            list(Some(a), "groups"),
            list(Some(a), "roles"),
        ),
        (_, Some(r)) => (
            r.approvers_list.clone(),
            r.approver_group_refs.clone(),
            r.approver_role_refs.clone(),
        ),
        _ => (vec![], vec![], vec![]),
    };
    let qualified = |id: &str| format!("{}:{id}", crate::directory::ISSUER);
    directory
        .iter()
        .filter(|p| p.email.as_deref().is_some_and(|e| !e.is_empty()))
        .filter(|p| {
            subjects.iter().any(|s| *s == p.id || *s == qualified(&p.id))
                || p.groups.iter().any(|g| groups.contains(g))
                || p.roles.iter().any(|r| roles.contains(r))
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(id: &str, email: Option<&str>, groups: &[&str], roles: &[&str]) -> Principal {
        Principal {
            id: id.into(),
            tenant: "t".into(),
            name: id.into(),
            email: email.map(String::from),
            groups: groups.iter().map(|s| s.to_string()).collect(),
            roles: roles.iter().map(|s| s.to_string()).collect(),
            is_override: false,
        }
    }

    #[test]
    fn eligibility_refs_or_audience_decide_who_is_told() {
        let dir = vec![
            p("ann", Some("ann@x"), &["finance"], &[]),
            p("bob", Some("bob@x"), &[], &["cfo"]),
            p("cat", None, &["finance"], &[]),
            p("dan", Some("dan@x"), &["ops"], &[]),
        ];
        let rules = ApprovalRules::from_config(
            &json!({"actions": ["accept"], "approverGroupRefs": ["finance"], "approverRoleRefs": ["cfo"]}),
        )
        .unwrap();
        let ids = |v: Vec<Principal>| v.into_iter().map(|p| p.id).collect::<Vec<_>>();
        assert_eq!(
            ids(recipients(Some(&rules), None, &dir)),
            ["ann", "bob"],
            "no address, no mail"
        );
        let audience = json!({"groups": ["ops"]});
        assert_eq!(ids(recipients(Some(&rules), Some(&audience), &dir)), ["dan"]);
        let open = ApprovalRules::from_config(&json!({"actions": ["accept"]})).unwrap();
        assert!(recipients(Some(&open), None, &dir).is_empty());
    }
}
