//! Principals and the v2 Subject they present on the wire.

use serde::{Deserialize, Serialize};

pub const ISSUER: &str = "tollgate";

/// OpenWOP v2 Subject (closed object).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Subject {
    pub issuer: String,
    pub subject_id: String,
    pub tenant: String,
    pub lane: String,
    pub kind: String,
}

/// Someone (or something) that acts: a person signed in, or an API key's owner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Principal {
    pub id: String,
    pub tenant: String,
    pub name: String,
    pub email: Option<String>,
    pub groups: Vec<String>,
    pub roles: Vec<String>,
    /// May release a gate alone where the gate sets `overrideBypassesQuorum`.
    pub is_override: bool,
}

/// How the principal authenticated; becomes `Subject.lane`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    ApiKey,
    Session,
    Token,
}

impl Principal {
    pub fn subject(&self, lane: Lane) -> Subject {
        Subject {
            issuer: ISSUER.to_string(),
            subject_id: self.id.clone(),
            tenant: self.tenant.clone(),
            lane: match lane {
                Lane::ApiKey => "api-key",
                Lane::Session => "session",
                // A token holder is the recipient the token was minted for.
                Lane::Token => "workload",
            }
            .to_string(),
            kind: "user".to_string(),
        }
    }
}
