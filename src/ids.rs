//! Identifier grammars of OpenWOP v2 (`schemas/ids.schema.json`) and their
//! path-segment projection (`tenant/opaque` travels as `tenant~2Fopaque`).

use crate::error::{EngineError, Result};

pub use tollgate_wire::ids::{
    encode_path_id, is_idempotency_key, is_node_id, is_opaque, is_tenant_bound, is_tenant_id, is_workflow_id,
    tenant_of, InvalidId,
};
pub use tollgate_wire::{NodeId, RunId, TenantId};

/// [`is_tenant_id`] as a validation error naming `field`.
pub fn check_tenant_id(field: &str, s: &str) -> Result<()> {
    if is_tenant_id(s) {
        Ok(())
    } else {
        Err(EngineError::validation(
            field,
            format!(
                "{field} {s:?} is not a tenant id: 1–128 of A–Z a–z 0–9 . _ - (optionally after \"anon:\")"
            ),
        ))
    }
}

/// [`is_node_id`] as a validation error naming `nodeId` (the id is not
/// echoed: a page or an API answer never repeats what it refuses).
pub fn check_node_id(s: &str) -> Result<()> {
    if is_node_id(s) {
        Ok(())
    } else {
        Err(EngineError::validation(
            "nodeId",
            "nodeId does not match ^[A-Za-z0-9._~:-]{1,128}$",
        ))
    }
}

/// The exact set of tenant-bound ids (`tenant/opaque`) of one tenant, as a
/// range: from `tenant/` up to, not including, `tenant0` (`0` follows `/`).
/// Every query that scopes rows by a tenant-bound column uses it, never a
/// pattern: `LIKE` treats `_` as a wildcard and ignores case, so `acme_x`
/// would match `acme-x` and `ACME_X`. Columns compare with SQLite's BINARY
/// collation, so the range is exact and case-sensitive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantRange {
    pub from: String,
    pub to: String,
}

impl TenantRange {
    pub fn of(tenant: &str) -> TenantRange {
        TenantRange {
            from: format!("{tenant}/"),
            to: format!("{tenant}0"),
        }
    }

    /// The predicate on `column`, with two `?` to bind `from` and `to` in order.
    pub fn sql(column: &str) -> String {
        format!("({column} >= ? AND {column} < ?)")
    }

    /// The predicate with numbered parameters `?n` (from) and `?n+1` (to).
    pub fn sql_numbered(column: &str, n: usize) -> String {
        format!("({column} >= ?{n} AND {column} < ?{})", n + 1)
    }

    /// Whether `id` lies in the range (the same test in Rust).
    pub fn contains(&self, id: &str) -> bool {
        id >= self.from.as_str() && id < self.to.as_str()
    }
}

/// `^[a-z][a-z0-9_-]*(\.[a-z][a-zA-Z0-9_-]*)+$`, at most 256 chars.
pub fn is_type_id(s: &str) -> bool {
    if s.len() > 256 {
        return false;
    }
    let mut parts = s.split('.');
    let head = parts.next().unwrap_or("");
    let head_ok = head.starts_with(|c: char| c.is_ascii_lowercase())
        && head
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    let mut rest = 0;
    let rest_ok = parts.all(|p| {
        rest += 1;
        p.starts_with(|c: char| c.is_ascii_lowercase())
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    });
    head_ok && rest_ok && rest > 0
}

/// A fresh opaque id: time-ordered (UUIDv7) so ids sort by creation.
pub fn new_opaque() -> String {
    uuid::Uuid::now_v7().simple().to_string()
}

pub fn new_tenant_bound(tenant: &str) -> String {
    format!("{tenant}/{}", new_opaque())
}

/// Decodes an id taken from one (already percent-decoded) path segment: the
/// OpenWOP wire form (identity.md §5, RFC 0184), where `~` and two hex digits
/// (either case) stand for one byte: `~2F` is `/`, `~7E` is `~`, `~3A` is `:`.
/// A `~` not followed by two hex digits, or escaped bytes that are not UTF-8,
/// is a malformed escape: 400 `validation_error` naming `field`. The router
/// has already turned `%2F` into `/`; decoding `%2F` again here would decode
/// twice.
pub fn decode_path_id(segment: &str, field: &str) -> Result<String> {
    let malformed = |why: &str| {
        EngineError::validation(
            field,
            format!(
                "{field}: malformed `~` escape: {why} (a `~` takes two hex digits: ~2F for /, ~7E for ~)"
            ),
        )
    };
    if !segment.contains('~') {
        return Ok(segment.to_string());
    }
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'~' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        let hex = |at: usize| bytes.get(at).and_then(|b| (*b as char).to_digit(16));
        match (hex(i + 1), hex(i + 2)) {
            (Some(hi), Some(lo)) => out.push((hi * 16 + lo) as u8),
            _ => return Err(malformed(&format!("at byte {i}"))),
        }
        i += 3;
    }
    String::from_utf8(out).map_err(|_| malformed("the escaped bytes are not UTF-8"))
}

/// Parses a run id from a path segment and checks its grammar: a malformed
/// segment is 400 `validation_error` naming `runId` (no lookup is made).
pub fn parse_run_id(segment: &str) -> Result<RunId> {
    RunId::parse(decode_path_id(segment, "runId")?).map_err(|_| {
        EngineError::validation(
            "runId",
            "runId: not a run id (tenant~2Fopaque: tenant ^(anon:)?[A-Za-z0-9._-]{1,128}$, opaque ^[A-Za-z0-9._~-]{16,128}$)",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Event ids have no unique index (migration 0025): one process never
    /// makes the same id twice, from any thread, and its ids sort in the
    /// order they were made.
    #[test]
    fn opaque_ids_from_one_process_strictly_increase_across_threads() {
        let batches: Vec<Vec<String>> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..4)
                .map(|_| s.spawn(|| (0..20_000).map(|_| new_opaque()).collect::<Vec<_>>()))
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        for ids in &batches {
            assert!(ids.windows(2).all(|w| w[0] < w[1]), "one thread's ids in order");
        }
        let all: std::collections::HashSet<&String> = batches.iter().flatten().collect();
        assert_eq!(all.len(), 80_000, "no id made twice");
    }

    #[test]
    fn run_ids_round_trip_through_one_path_segment() {
        let id = new_tenant_bound("acme");
        assert!(is_tenant_bound(&id));
        let seg = encode_path_id(&id);
        assert!(!seg.contains('/'));
        assert_eq!(decode_path_id(&seg, "runId").unwrap(), id);
        assert_eq!(decode_path_id(&seg.replace("~2F", "~2f"), "runId").unwrap(), id);
        // Decoded once: a literal %2F (sent as %252F) is not a separator.
        assert_eq!(
            decode_path_id("acme%2F0123456789abcdef", "runId").unwrap(),
            "acme%2F0123456789abcdef"
        );
        // A `~` in an id travels as ~7E.
        assert_eq!(encode_path_id("ab/0123456789ab~def"), "ab~2F0123456789ab~7Edef");
        assert_eq!(
            parse_run_id("ab~2F0123456789ab~7edef").unwrap(),
            "ab/0123456789ab~def"
        );
        // A tenant id never holds a `~`.
        assert!(parse_run_id("a~7Eb~2F0123456789abcdef").is_err());
    }

    #[test]
    fn multibyte_segments_do_not_panic() {
        // Regression: `GET /runs/%C3%A9%C3%A9` sliced inside a character.
        for seg in [
            "éé",
            "é~",
            "~é",
            "~2é",
            "~é2F",
            "日本~2F語",
            "~",
            "~~",
            "~2",
            "é~2Fé",
        ] {
            let _ = decode_path_id(seg, "runId");
            let _ = parse_run_id(seg);
        }
        assert_eq!(decode_path_id("é~2Fé", "runId").unwrap(), "é/é");
    }

    #[test]
    fn malformed_escapes_and_ids_are_validation_errors() {
        for seg in [
            "acme~0g123456789abcdef",
            "acme~",
            "acme~2",
            "acme~zz0123456789abcdef",
            "~é",
        ] {
            match decode_path_id(seg, "runId") {
                Err(EngineError::Validation { field, .. }) => assert_eq!(field.as_deref(), Some("runId")),
                other => panic!("{seg}: {other:?}"),
            }
        }
        // `~01` is a well-formed escape (a control byte): the grammar refuses the id.
        for seg in [
            "éé",
            "acme",
            "acme~2Fshort",
            "a~2Fb~2F0123456789abcdef",
            "",
            "acme~0123456789abcdef",
        ] {
            match parse_run_id(seg) {
                Err(e) => assert_eq!(e.code(), "validation_error", "{seg}"),
                Ok(id) => panic!("{seg} parsed as {id}"),
            }
        }
    }

    #[test]
    fn every_escape_is_two_hex_digits_and_anything_else_is_malformed() {
        // The OpenWOP wire form: `~` and two hex digits are one byte.
        for (seg, id) in [
            ("acme~2F0123456789abcdef", "acme/0123456789abcdef"),
            ("acme~2f0123456789abcdef", "acme/0123456789abcdef"),
            ("anon~3Aacme~2F0123456789abcdef", "anon:acme/0123456789abcdef"),
            ("anon:acme~2F0123456789abcdef", "anon:acme/0123456789abcdef"),
            ("acme~2F0123456789ab~7Edef", "acme/0123456789ab~def"),
            ("acme~2F0123456789abcde~66", "acme/0123456789abcdef"),
            ("caf~C3~A9~2Fr", "café/r"),
            ("t~2F~F0~9F~98~80", "t/\u{1f600}"),
        ] {
            assert_eq!(decode_path_id(seg, "runId").unwrap(), id, "{seg}");
        }
        assert_eq!(
            parse_run_id("anon~3Aacme~2F0123456789abcdef").unwrap(),
            "anon:acme/0123456789abcdef"
        );
        // A `~` without two hex digits, or bytes that are not UTF-8: 400 naming the field.
        for seg in [
            "acme~2Xr-0123456789abcdef",
            "acme~",
            "acme~2",
            "acme~X2F0123456789abcdef",
            "acme~~2F0123456789abcdef",
            "acme~2F0123456789abcdef~",
            "acme~2F0123456789abcdef~7",
            "acme~+F0123456789abcdef",
            "acme~ 20123456789abcdef",
            "acme~C3~2F0123456789abcdef",
            "acme~FF~2F0123456789abcdef",
            "acme~é2F0123456789abcdef",
        ] {
            for field in ["runId", "nodeId"] {
                match decode_path_id(seg, field) {
                    Err(EngineError::Validation { field: f, .. }) => {
                        assert_eq!(f.as_deref(), Some(field), "{seg}")
                    }
                    other => panic!("{seg}: {other:?}"),
                }
            }
            match parse_run_id(seg) {
                Err(EngineError::Validation { field, message, .. }) => {
                    assert_eq!(field.as_deref(), Some("runId"), "{seg}");
                    assert!(message.contains("malformed `~` escape"), "{seg}: {message}");
                }
                other => panic!("{seg}: {other:?}"),
            }
        }
    }

    #[test]
    fn tenant_ranges_are_exact_and_case_sensitive() {
        let r = TenantRange::of("acme-x");
        assert!(r.contains("acme-x/0123456789abcdef"));
        for other in [
            "acme_x/0123456789abcdef",
            "ACME-X/0123456789abcdef",
            "acme-xy/0123456789abcdef",
            "acme-/0123456789abcdef",
            "acme/0123456789abcdef",
            "acme-x",
            "acme-x0",
            "acme-x.y/0123456789abcdef",
        ] {
            assert!(!r.contains(other), "{other}");
        }
        assert!(is_tenant_id("acme_x") && is_tenant_id("ACME-X") && is_tenant_id("anon:a.b"));
        for bad in ["", "a/b", "a~2Fb", "a b", "a%b", "é", &"x".repeat(129)] {
            assert!(!is_tenant_id(bad), "{bad:?}");
            assert!(check_tenant_id("tenant", bad).is_err());
        }
    }

    #[test]
    fn grammars() {
        assert!(is_tenant_bound("anon:x/0123456789abcdef"));
        assert!(!is_tenant_bound("acme/short"));
        assert!(!is_tenant_bound("acme"));
        assert!(is_node_id("gate"));
        assert!(is_node_id("a:b"));
        assert!(!is_node_id("a b"));
        assert!(!is_node_id(""));
        assert!(is_type_id("core.approvalGate"));
        assert!(!is_type_id("core"));
        assert!(!is_type_id("Core.x"));
        assert!(is_idempotency_key("abcdefghijklmnopqrstuv"));
        assert!(!is_idempotency_key("short"));
        assert!(!is_idempotency_key("abcdefghijklmnopqrstu!"));
    }
}

#[cfg(test)]
mod properties {
    //! Property tests over arbitrary Unicode: no grammar or decoder panics,
    //! and the path projection round-trips.
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn grammars_never_panic(s in any::<String>()) {
            let _ = is_tenant_id(&s);
            let _ = is_opaque(&s);
            let _ = is_node_id(&s);
            let _ = is_workflow_id(&s);
            let _ = is_type_id(&s);
            let _ = is_tenant_bound(&s);
            let _ = is_idempotency_key(&s);
            let _ = tenant_of(&s);
        }

        #[test]
        fn decoders_never_panic(s in any::<String>()) {
            let _ = decode_path_id(&s, "runId");
            let _ = parse_run_id(&s);
        }

        #[test]
        fn decoders_never_panic_near_escapes(s in "[~2FfE7eé日/a]{0,12}") {
            let _ = decode_path_id(&s, "runId");
            let _ = parse_run_id(&s);
        }

        #[test]
        fn path_projection_round_trips(s in any::<String>()) {
            let seg = encode_path_id(&s);
            prop_assert!(!seg.contains('/'));
            prop_assert_eq!(decode_path_id(&seg, "runId").unwrap(), s);
        }

        #[test]
        fn run_ids_round_trip(
            tenant in "(anon:)?[A-Za-z0-9._-]{1,128}",
            opaque in "[A-Za-z0-9._~-]{16,128}",
        ) {
            let id = format!("{tenant}/{opaque}");
            prop_assert!(is_tenant_bound(&id));
            prop_assert_eq!(parse_run_id(&encode_path_id(&id)).unwrap(), id.clone());
            prop_assert_eq!(tenant_of(&id), tenant.as_str());
        }

        #[test]
        fn grammars_accept_exactly_their_language(s in any::<String>()) {
            let unreserved = |c: char| c.is_ascii_alphanumeric() || "._~-".contains(c);
            let n = s.chars().count();
            prop_assert_eq!(is_opaque(&s), (16..=128).contains(&n) && s.chars().all(unreserved));
            prop_assert_eq!(is_idempotency_key(&s), (22..=128).contains(&n) && s.chars().all(unreserved));
            prop_assert_eq!(
                is_node_id(&s),
                (1..=128).contains(&n) && s.chars().all(|c| unreserved(c) || c == ':')
            );
        }

        #[test]
        fn node_ids_of_the_grammar_are_accepted(s in "[A-Za-z0-9._~:-]{1,128}") {
            prop_assert!(is_node_id(&s));
            prop_assert!(is_workflow_id(&s));
        }

        #[test]
        fn idempotency_keys_of_the_grammar_are_accepted(s in "[A-Za-z0-9._~-]{22,128}") {
            prop_assert!(is_idempotency_key(&s));
        }

        #[test]
        fn type_ids_of_the_grammar_are_accepted(s in "[a-z][a-z0-9_-]{0,20}(\\.[a-z][a-zA-Z0-9_-]{0,20}){1,4}") {
            prop_assert!(is_type_id(&s));
        }
    }
}
