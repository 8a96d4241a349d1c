//! The local directory: principals with their groups and roles, and the v2
//! Subject a principal presents on the wire.

use crate::auth::Scope;

pub use tollgate_wire::directory::{Lane, Principal, Subject, ISSUER};

/// Whether `reference` (an entry of `approversList`, or of an audience's
/// `subjects`) names principal `id`: bare, or qualified by this directory's
/// issuer (`tollgate:ann`).
pub(crate) fn names(reference: &str, id: &str) -> bool {
    reference == id
        || reference
            .strip_prefix(ISSUER)
            .and_then(|rest| rest.strip_prefix(':'))
            == Some(id)
}

/// A principal from its stored columns; `groups` and `roles` are JSON
/// arrays of names, and a column that is not one is an error.
pub(crate) fn principal_from_columns(
    id: String,
    tenant: String,
    name: String,
    email: Option<String>,
    groups: &str,
    roles: &str,
    is_override: bool,
) -> crate::error::Result<Principal> {
    let list = |column: &str, text: &str| -> crate::error::Result<Vec<String>> {
        serde_json::from_str(text).map_err(|e| {
            crate::error::EngineError::Storage(format!(
                "principals.{column} of {id}: not a JSON list of names: {e}"
            ))
        })
    };
    Ok(Principal {
        groups: list("groups", groups)?,
        roles: list("roles", roles)?,
        id,
        tenant,
        name,
        email,
        is_override,
    })
}

/// The actor of an engine operation: who, how they authenticated, and what
/// they may do. Every engine operation checks the scope it needs itself, so
/// no adapter can skip it.
#[derive(Debug, Clone)]
pub struct Actor {
    pub principal: Principal,
    pub lane: Lane,
    /// `admin` implies every other scope.
    pub scopes: Vec<Scope>,
}

impl Actor {
    /// An API key's owner with the key's scopes.
    pub fn api_key(principal: Principal, scopes: Vec<Scope>) -> Actor {
        Actor {
            principal,
            lane: Lane::ApiKey,
            scopes,
        }
    }

    /// A person signed in to the console: reads and decides in their tenant;
    /// with the `admin` role also administers it (the dashboard).
    pub fn session(principal: Principal) -> Actor {
        let mut scopes = vec![Scope::RunsRead, Scope::ApprovalsRespond];
        if principal
            .roles
            .iter()
            .any(|r| r == crate::engine::admin::ADMIN_ROLE)
        {
            scopes.push(Scope::Admin);
        }
        Actor {
            principal,
            lane: Lane::Session,
            scopes,
        }
    }

    /// A link's recipient: sees what the link shows, and responds only while
    /// the principal still holds `approvals:respond` (see
    /// [`crate::Engine::holds_respond`]).
    pub fn token(principal: Principal, may_respond: bool) -> Actor {
        let mut scopes = vec![Scope::RunsRead];
        if may_respond {
            scopes.push(Scope::ApprovalsRespond);
        }
        Actor {
            principal,
            lane: Lane::Token,
            scopes,
        }
    }

    /// The instance operator acting for a principal (configuration, e.g. demo runs).
    pub fn operator(principal: Principal) -> Actor {
        Actor {
            principal,
            lane: Lane::ApiKey,
            scopes: vec![Scope::Admin],
        }
    }

    pub fn allows(&self, scope: Scope) -> bool {
        self.scopes.contains(&scope) || self.scopes.contains(&Scope::Admin)
    }

    /// `403 forbidden` naming the missing scope.
    pub fn require(&self, scope: Scope) -> crate::error::Result<()> {
        if self.allows(scope) {
            Ok(())
        } else {
            Err(crate::error::EngineError::Forbidden(format!(
                "{} lacks the {} scope",
                match self.lane {
                    Lane::ApiKey => "this API key",
                    Lane::Session => "this session",
                    Lane::Token => "this link's recipient",
                },
                scope.as_str()
            )))
        }
    }

    pub fn subject(&self) -> Subject {
        self.principal.subject(self.lane)
    }
    pub fn tenant(&self) -> &str {
        &self.principal.tenant
    }
}
