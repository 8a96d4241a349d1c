//! What a definition's `pattern`s may cost. Schemas are checked on the
//! writer that every tenant's commands share, and the `regex` engine's time
//! is linear in the text but grows with the pattern: one whose automaton
//! does not fit the engine's cache (`a[ab]{1000}[^ab]`) falls back to
//! simulating it, seconds per request on a large answer. A pattern is
//! accepted at registration only if its whole search automaton, as
//! `jsonschema` runs it (translated, and counted or shrunk where it can),
//! fits [`MAX_PATTERN_AUTOMATON`]: then matching
//! is one table step per byte. Checked where definitions are registered,
//! never on stored ones (they keep working as they did).

use regex_automata::dfa::dense;
use serde_json::Value;

/// The largest search automaton (a dense DFA, in bytes) a schema pattern
/// may need: about 16 ms per 2 MiB of text at this bound, where the regex
/// engine's cache (2 MiB) still holds it. Everyday patterns need a few KiB
/// (`^[A-Z]{3}-\d{4}$`: 0.5 KiB; `^\p{L}+$`: 152 KiB).
pub const MAX_PATTERN_AUTOMATON: usize = 1 << 20;

/// Keywords whose values are data, not schemas: a `pattern` there is text.
const DATA_KEYWORDS: [&str; 4] = ["const", "default", "enum", "examples"];

/// Keywords whose values map names (properties, definitions) to schemas:
/// the names there are not keywords, whatever they spell.
const NAMED_SCHEMAS: [&str; 5] = [
    "properties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
];

/// Refuses the first `pattern` (or `patternProperties` name) in `schema`
/// whose automaton is larger than [`MAX_PATTERN_AUTOMATON`], naming it.
/// Patterns the engine cannot take at all are left to the schema's compiler.
/// Anything that is not known to be data is walked as a schema, so a
/// property named `default` is checked like any other.
pub fn refuse_costly(schema: &Value) -> Result<(), String> {
    match schema {
        Value::Object(members) => {
            for (keyword, value) in members {
                match (keyword.as_str(), value) {
                    (k, _) if DATA_KEYWORDS.contains(&k) => {}
                    ("pattern", Value::String(pattern)) => check(pattern)?,
                    ("patternProperties", Value::Object(by_pattern)) => {
                        for (pattern, sub) in by_pattern {
                            check(pattern)?;
                            refuse_costly(sub)?;
                        }
                    }
                    (k, Value::Object(by_name)) if NAMED_SCHEMAS.contains(&k) => {
                        by_name.values().try_for_each(refuse_costly)?
                    }
                    _ => refuse_costly(value)?,
                }
            }
            Ok(())
        }
        Value::Array(items) => items.iter().try_for_each(refuse_costly),
        _ => Ok(()),
    }
}

fn check(pattern: &str) -> Result<(), String> {
    let Ok(translated) = jsonschema_regex::to_rust_regex(pattern) else {
        return Ok(());
    };
    // What `jsonschema` runs in its place, as it compiles it: `^X{m,n}$`
    // over one class is a count of characters, and counts at an edge
    // shrink to their minimum.
    let searched = match jsonschema_regex::search_form(pattern, &translated) {
        Some(jsonschema_regex::Search::RepeatedClass(_)) => return Ok(()),
        Some(jsonschema_regex::Search::Collapsed(collapsed)) => collapsed,
        None => translated.into_owned(),
    };
    let config = dense::Config::new()
        .dfa_size_limit(Some(MAX_PATTERN_AUTOMATON))
        .determinize_size_limit(Some(MAX_PATTERN_AUTOMATON));
    match dense::Builder::new().configure(config).build(&searched) {
        Ok(_) => Ok(()),
        Err(e) if e.to_string().contains("size limit") => Err(format!(
            "pattern {pattern:?} is too costly to check: its automaton needs more than {} KiB \
             (usually a long counted repetition a match may start anywhere before; anchor it \
             with ^, or check the length with minLength/maxLength and the characters with a \
             repeated class)",
            MAX_PATTERN_AUTOMATON / 1024
        )),
        // Not ours to judge (the schema's compiler says what is wrong).
        Err(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn everyday_patterns_pass() {
        for p in [
            r"^[A-Z]{3}-\d{4}$",
            r"^\w+$",
            r"^\p{L}+$",
            r"^[\p{L} '-]+$",
            r"^\S+@\S+\.\S+$",
            r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$",
            r"^https?://[^\s/$.?#].[^\s]*$",
            r"^.{0,64}$",
            r"(?i)^[a-z]+$",
            // Counted, not compiled, by the schema's engine.
            r"^\p{L}{1,64}$",
            // Its count at the edge shrinks to its minimum, `a`.
            r"a[ab]{0,1000}",
        ] {
            refuse_costly(&json!({"type": "string", "pattern": p})).unwrap_or_else(|e| panic!("{p}: {e}"));
        }
    }

    #[test]
    fn a_pattern_whose_automaton_explodes_is_refused_wherever_it_stands() {
        let costly = r"a[ab]{1000}[^ab]";
        for schema in [
            json!({"type": "string", "pattern": costly}),
            json!({"type": "object", "properties": {"code": {"type": "string", "pattern": costly}}}),
            json!({"type": "object", "patternProperties": {costly: {"type": "string"}}}),
            json!({"allOf": [{"type": "string"}, {"items": {"pattern": costly}}]}),
            json!({"$defs": {"x": {"propertyNames": {"pattern": costly}}}}),
            // Properties and definitions named like data keywords are schemas.
            json!({"properties": {"default": {"type": "string", "pattern": costly}}}),
            json!({"properties": {"examples": {"pattern": costly}}}),
            json!({"properties": {"const": {"properties": {"enum": {"pattern": costly}}}}}),
            json!({"$defs": {"enum": {"pattern": costly}}}),
            json!({"dependentSchemas": {"default": {"pattern": costly}}}),
            json!({"patternProperties": {"^x$": {"properties": {"const": {"pattern": costly}}}}}),
        ] {
            let refused = refuse_costly(&schema).unwrap_err();
            assert!(
                refused.contains("too costly") && refused.contains(costly),
                "{refused}"
            );
        }
        // Just past the bound: 2^12 states of a sliding window.
        assert!(refuse_costly(&json!({"pattern": r"a[ab]{12}[^ab]"})).is_err());
        assert!(refuse_costly(&json!({"pattern": r"a[ab]{10}[^ab]"})).is_ok());
        // Anchored, as the refusal suggests, the same repetition is cheap.
        assert!(refuse_costly(&json!({"pattern": r"^a[ab]{1000}[^ab]"})).is_ok());
    }

    #[test]
    fn patterns_in_data_are_text_and_bad_patterns_are_left_to_the_compiler() {
        let costly = r"a[ab]{1000}[^ab]";
        refuse_costly(&json!({"type": "object", "default": {"pattern": costly}, "examples": [{"pattern": costly}], "enum": [{"pattern": costly}], "const": {"pattern": costly}})).unwrap();
        refuse_costly(&json!({"pattern": "(unclosed"})).unwrap();
        refuse_costly(&json!({"pattern": 5})).unwrap();
    }
}
