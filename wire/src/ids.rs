//! Identifier grammars of OpenWOP v2 (`schemas/ids.schema.json`) and the
//! newtypes of the ids the engine passes around: a run id cannot be handed
//! where a node id or a tenant id belongs.

use serde::{Deserialize, Serialize};
use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;

fn is_unreserved(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '~' | '-')
}

fn chars_within(s: &str, min: usize, max: usize, extra: &[char]) -> bool {
    let n = s.chars().count();
    n >= min && n <= max && s.chars().all(|c| is_unreserved(c) || extra.contains(&c))
}

/// The one tenant-id grammar of this host, wherever a tenant id enters
/// (configuration, CLI, directory, run ids): v2's `^(anon:)?[A-Za-z0-9._~-]{1,128}$`
/// without `~`, which the path projection of run ids (`~2F`) reserves.
/// Case matters: `ACME-X`, `acme-x` and `acme_x` are three tenants.
pub fn is_tenant_id(s: &str) -> bool {
    let bare = s.strip_prefix("anon:").unwrap_or(s);
    chars_within(bare, 1, 128, &[]) && !bare.contains('~')
}

pub fn is_opaque(s: &str) -> bool {
    chars_within(s, 16, 128, &[])
}

/// `nodeId` and `workflowId` share the grammar `^[A-Za-z0-9._~:-]{1,128}$`.
pub fn is_node_id(s: &str) -> bool {
    chars_within(s, 1, 128, &[':'])
}

pub fn is_workflow_id(s: &str) -> bool {
    is_node_id(s)
}

/// `^(anon:)?[A-Za-z0-9._~-]{1,128}/[A-Za-z0-9._~-]{16,128}$`
pub fn is_tenant_bound(s: &str) -> bool {
    match s.split_once('/') {
        Some((tenant, opaque)) => is_tenant_id(tenant) && is_opaque(opaque),
        None => false,
    }
}

/// Idempotency-Key grammar: `^[A-Za-z0-9._~-]{22,128}$`.
pub fn is_idempotency_key(s: &str) -> bool {
    chars_within(s, 22, 128, &[])
}

/// The tenant part of a tenant-bound id (`acme/…` → `acme`).
pub fn tenant_of(id: &str) -> &str {
    id.split_once('/').map(|(t, _)| t).unwrap_or("")
}

/// The projection of an id into one path segment, the OpenWOP wire form
/// (identity.md §5, RFC 0184): every UTF-8 byte outside `[A-Za-z0-9._-]`
/// becomes `~` and two uppercase hex digits (`/` → `~2F`, `~` → `~7E`,
/// `:` → `~3A`).
pub fn encode_path_id(id: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(id.len() + 4);
    for b in id.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-') {
            out.push(b as char);
        } else {
            out.push('~');
            out.push(HEX[(b >> 4) as usize] as char);
            out.push(HEX[(b & 15) as usize] as char);
        }
    }
    out
}

/// A string that does not follow an id's grammar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidId {
    /// The wire name of the id (`runId`, `nodeId`, `tenant`).
    pub field: &'static str,
    pub value: String,
}

impl fmt::Display for InvalidId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {:?} is not a valid {}",
            self.field, self.value, self.field
        )
    }
}

impl std::error::Error for InvalidId {}

macro_rules! id_type {
    ($(#[$meta:meta])* $name:ident, $field:literal, $grammar:path) => {
        $(#[$meta])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// Checks the grammar.
            pub fn parse(s: impl Into<String>) -> Result<Self, InvalidId> {
                let s = s.into();
                if $grammar(&s) {
                    Ok($name(s))
                } else {
                    Err(InvalidId { field: $field, value: s })
                }
            }

            /// An id that was checked when it entered (a definition, a
            /// stored row), taken without checking it again.
            pub fn trusted(s: impl Into<String>) -> Self {
                $name(s.into())
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }

            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&self.0, f)
            }
        }

        impl TryFrom<String> for $name {
            type Error = InvalidId;
            fn try_from(s: String) -> Result<Self, InvalidId> {
                $name::parse(s)
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl From<&$name> for String {
            fn from(id: &$name) -> String {
                id.0.clone()
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<$name> for String {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }

        impl PartialEq<$name> for &str {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }
    };
}

id_type!(
    /// A tenant (`acme`, `anon:…`).
    TenantId,
    "tenant",
    is_tenant_id
);
id_type!(
    /// A run: `tenant/opaque`, so the tenant is part of the id.
    RunId,
    "runId",
    is_tenant_bound
);
id_type!(
    /// A node of a workflow definition.
    NodeId,
    "nodeId",
    is_node_id
);

impl RunId {
    /// The tenant the run belongs to.
    pub fn tenant(&self) -> &str {
        tenant_of(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_check_their_grammar() {
        let run = RunId::parse("acme/0123456789abcdef").unwrap();
        assert_eq!(run.tenant(), "acme");
        assert_eq!(run, "acme/0123456789abcdef");
        assert_eq!(RunId::parse("acme").unwrap_err().field, "runId");
        assert!(TenantId::parse("a~b").is_err());
        assert!(NodeId::parse("gate:1").is_ok());
        assert!(NodeId::parse("").is_err());
    }

    #[test]
    fn ids_travel_as_plain_strings_and_are_checked_on_the_way_in() {
        let run = RunId::parse("acme/0123456789abcdef").unwrap();
        assert_eq!(serde_json::to_value(&run).unwrap(), "acme/0123456789abcdef");
        assert!(serde_json::from_value::<RunId>("acme/short".into()).is_err());
        assert_eq!(format!("{run:?}"), "\"acme/0123456789abcdef\"");
    }

    #[test]
    fn grammars() {
        assert!(is_tenant_id("anon:x") && !is_tenant_id("") && !is_tenant_id("a/b"));
        assert!(is_tenant_bound("t/0123456789abcdef") && !is_tenant_bound("t/0123"));
        assert_eq!(encode_path_id("ab/0123456789ab~def"), "ab~2F0123456789ab~7Edef");
        // The OpenWOP wire form projects every byte outside [A-Za-z0-9._-].
        assert_eq!(encode_path_id("acme/r-9f3c"), "acme~2Fr-9f3c");
        assert_eq!(encode_path_id("anon:sess-3f9c/r_1.2"), "anon~3Asess-3f9c~2Fr_1.2");
        assert_eq!(encode_path_id("café/r"), "caf~C3~A9~2Fr");
        assert_eq!(tenant_of("acme/x"), "acme");
    }
}
