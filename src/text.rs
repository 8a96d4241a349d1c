//! Text every store can hold. PostgreSQL's `text` cannot contain U+0000,
//! so a NUL in what a run is given or answered would be stored on SQLite
//! and refused by PostgreSQL; it is refused up front on both, naming where.

use crate::error::{EngineError, Result};
use serde_json::Value;

/// Refuses a NUL character in any string or member name of `value`; the
/// error names the member (`inputs.note`, `resumeValue.items[2]`).
pub fn refuse_nul(value: &Value, field: &str) -> Result<()> {
    // The common case (no NUL anywhere) builds no member paths.
    if !has_nul(value) {
        return Ok(());
    }
    name_nul(value, field)
}

fn has_nul(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains('\0'),
        Value::Array(items) => items.iter().any(has_nul),
        Value::Object(members) => members.iter().any(|(k, v)| k.contains('\0') || has_nul(v)),
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

fn name_nul(value: &Value, field: &str) -> Result<()> {
    match value {
        Value::String(s) => refuse_nul_str(s, field),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, item)| name_nul(item, &format!("{field}[{i}]"))),
        Value::Object(members) => members.iter().try_for_each(|(name, member)| {
            // The error names the member without repeating the NUL itself.
            let at = format!("{field}.{}", name.replace('\0', "\\u0000"));
            refuse_nul_str(name, &at)?;
            name_nul(member, &at)
        }),
        Value::Null | Value::Bool(_) | Value::Number(_) => Ok(()),
    }
}

/// An optional free text (a label, a reason): trimmed, empty is none, at
/// most `max_chars` characters and no NUL; refusals name `field`.
pub fn optional_text(text: Option<String>, field: &str, max_chars: usize) -> Result<Option<String>> {
    let text = text.map(|t| t.trim().to_string()).filter(|t| !t.is_empty());
    if let Some(t) = &text {
        if t.chars().count() > max_chars {
            return Err(EngineError::validation(
                field,
                format!("{field}: at most {max_chars} characters"),
            ));
        }
        refuse_nul_str(t, field)?;
    }
    Ok(text)
}

/// One line of plain text (a person's name, an address): no control
/// characters — a line break in a name would end a mail header early.
pub fn refuse_control_str(text: &str, field: &str) -> Result<()> {
    match text.chars().find(|c| c.is_control()) {
        None => Ok(()),
        Some(c) => Err(EngineError::validation(
            field,
            format!(
                "{field}: must be one line of text without control characters (found U+{:04X})",
                c as u32
            ),
        )),
    }
}

/// The longest headline, in characters: an inbox row or a mail subject.
pub const HEADLINE_MAX_CHARS: usize = 200;

/// `text` as one short line — an interrupt's title, a mail subject. A
/// title may be bound from a run's inputs; a line break in it would let the
/// run's author write lines of their own into a mail ("Open this link…")
/// or end a header early, and a bidi override could make it read backwards.
/// Each run of whitespace and control characters becomes one space, bidi
/// controls are dropped, and past [`HEADLINE_MAX_CHARS`] it ends with "…".
pub fn headline(text: &str) -> String {
    let mut out = String::new();
    for word in text.split(|c: char| c.is_whitespace() || c.is_control()) {
        let word: String = word.chars().filter(|c| !is_bidi_control(*c)).collect();
        if word.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&word);
    }
    match out.char_indices().nth(HEADLINE_MAX_CHARS) {
        None => out,
        Some(_) => {
            let (cut, _) = out.char_indices().nth(HEADLINE_MAX_CHARS - 1).unwrap_or_default();
            format!("{}…", out[..cut].trim_end())
        }
    }
}

/// The explicit bidirectional formatting characters (embeddings, overrides,
/// isolates and marks), which reorder how the text around them reads.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{200E}' | '\u{200F}' | '\u{061C}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Refuses a NUL character in `text`, naming `field`.
pub fn refuse_nul_str(text: &str, field: &str) -> Result<()> {
    if text.contains('\0') {
        return Err(EngineError::validation(
            field,
            format!("{field}: text cannot contain the NUL character (U+0000)"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field_of(r: Result<()>) -> Option<String> {
        match r {
            Err(EngineError::Validation { field, .. }) => field,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_headline_is_one_short_line_without_reordering() {
        assert_eq!(headline("Pay invoice 7"), "Pay invoice 7");
        assert_eq!(
            headline("  Pay\r\n\r\nOpen this link:\u{2028}https://evil.test \t "),
            "Pay Open this link: https://evil.test"
        );
        assert_eq!(headline("Pay \u{202E}gnp.exe"), "Pay gnp.exe");
        assert_eq!(headline("\n\u{0}\t"), "");
        let long = "é".repeat(500);
        let cut = headline(&long);
        assert_eq!(cut.chars().count(), HEADLINE_MAX_CHARS);
        assert!(cut.ends_with('…'));
        let exact = "x".repeat(HEADLINE_MAX_CHARS);
        assert_eq!(headline(&exact), exact);
    }

    #[test]
    fn names_the_member_holding_a_nul() {
        refuse_nul(&json!({"a": ["x", {"b": "y"}], "n": 1, "t": true}), "inputs").unwrap();
        assert_eq!(
            field_of(refuse_nul(&json!({"a": ["x", {"b": "y\u{0}"}]}), "inputs")).as_deref(),
            Some("inputs.a[1].b")
        );
        assert_eq!(
            field_of(refuse_nul(&json!({"k\u{0}": 1}), "resumeValue")).as_deref(),
            Some("resumeValue.k\\u0000")
        );
        assert_eq!(
            field_of(refuse_nul(&json!("\u{0}"), "resumeValue")).as_deref(),
            Some("resumeValue")
        );
    }
}
