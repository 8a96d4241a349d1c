//! "No interrupt may solicit credential material" (interrupt.md): a schema
//! or question that asks a person for a password, secret, token or key is
//! refused at registration. Credentials are acquired through a `credential`
//! interrupt, whose resume carries only `{outcome}`.

use serde_json::Value;

/// Words a field name or question is judged by, compared without case,
/// `_`, `-` or spaces.
const CONTAINS: [&str; 5] = ["password", "passwd", "passphrase", "secret", "credential"];
const ENDS_WITH: [&str; 10] = [
    "token",
    "tokens",
    "apikey",
    "privatekey",
    "secretkey",
    "accesskey",
    "signingkey",
    "sshkey",
    "encryptionkey",
    "pincode",
];

fn normalized(name: &str) -> String {
    name.chars()
        .filter(char::is_ascii_alphanumeric)
        .flat_map(char::to_lowercase)
        .collect()
}

/// Whether a field name names credential material (`password`, `api_key`, `accessToken`).
pub fn is_credential_name(name: &str) -> bool {
    let n = normalized(name);
    CONTAINS.iter().any(|w| n.contains(w)) || ENDS_WITH.iter().any(|w| n.ends_with(w))
}

/// Where `schema` asks for credential material, and why: `None` when it does not.
/// `at` is the JSON pointer of `schema` in its document (`""` at the root).
pub fn solicited_by_schema(schema: &Value, at: &str) -> Option<String> {
    let obj = schema.as_object()?;
    if obj.get("format").and_then(Value::as_str) == Some("password") {
        return Some(format!("{}: format \"password\"", pointer(at)));
    }
    if obj.get("writeOnly") == Some(&Value::Bool(true)) {
        return Some(format!("{}: writeOnly", pointer(at)));
    }
    if let Some(props) = obj.get("properties").and_then(Value::as_object) {
        for (name, sub) in props {
            let here = format!("{at}/properties/{}", name.replace('~', "~0").replace('/', "~1"));
            if is_credential_name(name) {
                return Some(format!("{}: property \"{name}\"", pointer(&here)));
            }
            if let Some(found) = solicited_by_schema(sub, &here) {
                return Some(found);
            }
        }
    }
    if let Some(required) = obj.get("required").and_then(Value::as_array) {
        if let Some(name) = required
            .iter()
            .filter_map(Value::as_str)
            .find(|n| is_credential_name(n))
        {
            return Some(format!("{}: required property \"{name}\"", pointer(at)));
        }
    }
    for key in [
        "items",
        "additionalProperties",
        "not",
        "if",
        "then",
        "else",
        "contains",
    ] {
        if let Some(sub) = obj.get(key) {
            if let Some(found) = solicited_by_schema(sub, &format!("{at}/{key}")) {
                return Some(found);
            }
        }
    }
    for key in ["oneOf", "anyOf", "allOf", "prefixItems"] {
        for (i, sub) in obj
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            if let Some(found) = solicited_by_schema(sub, &format!("{at}/{key}/{i}")) {
                return Some(found);
            }
        }
    }
    for key in ["$defs", "definitions"] {
        for (name, sub) in obj.get(key).and_then(Value::as_object).into_iter().flatten() {
            if let Some(found) = solicited_by_schema(sub, &format!("{at}/{key}/{name}")) {
                return Some(found);
            }
        }
    }
    None
}

fn pointer(at: &str) -> String {
    if at.is_empty() {
        "/".into()
    } else {
        at.into()
    }
}

/// Phrases in a question's text that ask for credential material.
const ASKING: [&str; 8] = [
    "password",
    "passphrase",
    "api key",
    "apikey",
    "secret key",
    "access token",
    "private key",
    "one-time code",
];

/// Where a clarification question asks for credential material: its id, its
/// answer schema or its text.
pub fn solicited_by_question(question: &Value) -> Option<String> {
    if let Some(id) = question.get("id").and_then(Value::as_str) {
        if is_credential_name(id) {
            return Some(format!("id \"{id}\""));
        }
    }
    if let Some(found) = question.get("schema").and_then(|s| solicited_by_schema(s, "")) {
        return Some(format!("schema {found}"));
    }
    let text = question.get("question").and_then(Value::as_str)?.to_lowercase();
    ASKING
        .iter()
        .find(|p| text.contains(*p))
        .map(|p| format!("question text asks for a {p}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_that_hold_credentials_are_recognised() {
        for n in [
            "password",
            "userPassword",
            "api_key",
            "API-KEY",
            "accessToken",
            "refresh_token",
            "clientSecret",
            "privateKey",
            "aws_secret_access_key",
            "credentials",
            "passphrase",
        ] {
            assert!(is_credential_name(n), "{n}");
        }
        for n in [
            "amount",
            "reason",
            "keyword",
            "monkey",
            "tokenCount",
            "comment",
            "approver",
        ] {
            assert!(!is_credential_name(n), "{n}");
        }
    }

    #[test]
    fn schemas_are_searched_at_any_depth() {
        assert_eq!(
            solicited_by_schema(
                &json!({"type": "object", "properties": {"pw": {"type": "string", "format": "password"}}}),
                ""
            ),
            Some("/properties/pw: format \"password\"".into())
        );
        assert_eq!(
            solicited_by_schema(
                &json!({"type": "object", "properties": {"login": {"type": "object", "properties": {"apiKey": {"type": "string"}}}}}),
                ""
            ),
            Some("/properties/login/properties/apiKey: property \"apiKey\"".into())
        );
        assert!(solicited_by_schema(
            &json!({"type": "object", "properties": {"x": {"type": "string", "writeOnly": true}}}),
            ""
        )
        .is_some());
        assert!(solicited_by_schema(&json!({"type": "object", "properties": {"list": {"type": "array", "items": {"type": "object", "properties": {"token": {}}}}}}), "").is_some());
        assert!(solicited_by_schema(
            &json!({"type": "object", "oneOf": [{"properties": {"secret": {}}}]}),
            ""
        )
        .is_some());
        assert_eq!(
            solicited_by_schema(
                &json!({"type": "object", "properties": {"amount": {"type": "number"}, "note": {"type": "string"}}}),
                ""
            ),
            None
        );
    }

    #[test]
    fn questions_are_judged_by_id_schema_and_text() {
        assert!(solicited_by_question(&json!({"id": "db_password", "question": "?"})).is_some());
        assert!(
            solicited_by_question(&json!({"id": "q", "question": "What is the admin password?"})).is_some()
        );
        assert!(solicited_by_question(
            &json!({"id": "q", "question": "?", "schema": {"type": "string", "format": "password"}})
        )
        .is_some());
        assert!(
            solicited_by_question(&json!({"id": "q", "question": "Which region should we deploy to?"}))
                .is_none()
        );
    }
}
