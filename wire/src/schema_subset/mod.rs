//! The JSON-Schema subset the console can draw as a form (DESIGN §5).
//!
//! [`check`] accepts exactly that subset and refuses anything else with a
//! message naming the JSON pointer and the keyword, so a definition whose
//! `requestSchema` or `resumeSchema` could not be drawn is refused at
//! registration instead of being drawn wrong. The console draws the field
//! tree [`field_tree`] builds, which starts with this same check: the subset
//! is defined here once.
//!
//! The subset:
//! - anywhere: `title`, `description` (strings), `default`, `readOnly` (boolean),
//!   `$schema`, `$id`, `$comment`, `examples`;
//! - the top level is `"type": "object"`;
//! - `object`: `properties`, `required` (names from `properties`),
//!   `additionalProperties` as `true` or `false`; a nested object without
//!   `properties` is drawn as a JSON text field;
//! - `string`: `format` (`date`, `date-time`, `email`, `uri`), `minLength`,
//!   `maxLength`, `pattern`;
//! - `number` and `integer`: `minimum`, `maximum`, `exclusiveMinimum`,
//!   `exclusiveMaximum`;
//! - `boolean`;
//! - `enum` of strings, numbers or booleans, with or without `type`;
//! - `oneOf` whose members are all `{"const": …, "title": …}` (`title`,
//!   `description` and `$comment` optional), with or without `type`;
//! - `array`: `items` (one schema: a scalar, an object, or a choice),
//!   `minItems`, `maxItems`;
//! - a property schema with no keywords but annotations (`{}`), drawn as a
//!   JSON text field.
//!
//! Property names may not be empty or contain `.` (form fields are named by
//! dotted paths), and top-level names may not start with `_` (reserved for the
//! form's own controls, e.g. `_add` and `_remove`).

use serde_json::{Map, Value};

mod tree;
pub use tree::{field_tree, humanize, FieldKind, FieldNode, TextFormat};

/// Keywords allowed on any schema; they do not change what is drawn.
pub const ANNOTATIONS: [&str; 8] = [
    "title",
    "description",
    "default",
    "readOnly",
    "$schema",
    "$id",
    "$comment",
    "examples",
];

/// The string formats the console draws (`type="date"`, `datetime-local`, `email`, `url`).
pub const FORMATS: [&str; 4] = ["date", "date-time", "email", "uri"];

/// Keywords allowed on a `oneOf` member besides `const`.
const CONST_MEMBER: [&str; 3] = ["title", "description", "$comment"];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    Root,
    Property,
    Item,
}

/// Accepts a schema the console can draw; refuses anything else with
/// `"<pointer>: <problem>"`, e.g.
/// `/properties/items: keyword "patternProperties" is not supported by the console`.
/// The top level is shown as `/`.
pub fn check(schema: &Value) -> Result<(), String> {
    node(schema, "", Place::Root)
}

fn at(ptr: &str) -> &str {
    if ptr.is_empty() {
        "/"
    } else {
        ptr
    }
}

fn unsupported(ptr: &str, keyword: &str) -> String {
    format!(
        "{}: keyword \"{keyword}\" is not supported by the console",
        at(ptr)
    )
}

fn escape(seg: &str) -> String {
    seg.replace('~', "~0").replace('/', "~1")
}

fn is_scalar(v: &Value) -> bool {
    matches!(v, Value::String(_) | Value::Number(_) | Value::Bool(_))
}

fn node(schema: &Value, ptr: &str, place: Place) -> Result<(), String> {
    let m = match schema {
        Value::Object(m) => m,
        Value::Bool(true) if place == Place::Property => return Ok(()),
        _ => {
            return Err(format!(
                "{}: only schema objects are supported by the console (not {schema})",
                at(ptr)
            ))
        }
    };
    annotations(m, ptr)?;
    let ty = match m.get("type") {
        None => None,
        Some(Value::String(t)) => Some(t.as_str()),
        Some(Value::Array(_)) => {
            return Err(format!(
                "{}: keyword \"type\" with a list of types is not supported by the console",
                at(ptr)
            ))
        }
        Some(other) => {
            return Err(format!(
                "{}: keyword \"type\" must be a string, not {other}",
                at(ptr)
            ))
        }
    };
    if place == Place::Root && ty != Some("object") {
        return Err(format!(
            "{}: the console draws only an object (\"type\": \"object\") at the top level",
            at(ptr)
        ));
    }
    let allowed: &[&str] = match ty {
        None => &["enum", "oneOf"],
        Some("string") => &[
            "type",
            "format",
            "minLength",
            "maxLength",
            "pattern",
            "enum",
            "oneOf",
        ],
        Some("number" | "integer") => &[
            "type",
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "enum",
            "oneOf",
        ],
        Some("boolean") => &["type", "enum", "oneOf"],
        Some("object") => &["type", "properties", "required", "additionalProperties"],
        Some("array") => &["type", "items", "minItems", "maxItems"],
        Some(other) => {
            return Err(format!(
                "{}: keyword \"type\" value \"{other}\" is not supported by the console",
                at(ptr)
            ))
        }
    };
    for k in m.keys() {
        if !ANNOTATIONS.contains(&k.as_str()) && !allowed.contains(&k.as_str()) {
            return Err(match ty {
                Some(t) if is_known_elsewhere(k) => format!(
                    "{}: keyword \"{k}\" is not supported by the console for type \"{t}\"",
                    at(ptr)
                ),
                None if is_known_elsewhere(k) => format!(
                    "{}: keyword \"{k}\" is not supported by the console without a \"type\"",
                    at(ptr)
                ),
                _ => unsupported(ptr, k),
            });
        }
    }
    if m.contains_key("enum") && m.contains_key("oneOf") {
        return Err(format!(
            "{}: keyword \"oneOf\" together with \"enum\" is not supported by the console",
            at(ptr)
        ));
    }
    if let Some(e) = m.get("enum") {
        return enumeration(e, ptr);
    }
    if let Some(o) = m.get("oneOf") {
        return one_of(o, ptr);
    }
    match ty {
        None => match place {
            Place::Property => Ok(()),
            _ => Err(format!(
                "{}: a schema without \"type\" (free JSON) is not supported by the console here",
                at(ptr)
            )),
        },
        Some("string") => {
            if let Some(f) = m.get("format") {
                match f.as_str() {
                    Some(f) if FORMATS.contains(&f) => {}
                    _ => {
                        return Err(format!(
                        "{}: keyword \"format\" value {f} is not supported by the console (supported: {})",
                        at(ptr),
                        FORMATS.join(", ")
                    ))
                    }
                }
            }
            count(m, ptr, &["minLength", "maxLength"])?;
            if m.get("pattern").is_some_and(|p| !p.is_string()) {
                return Err(format!("{}: keyword \"pattern\" must be a string", at(ptr)));
            }
            Ok(())
        }
        Some("number" | "integer") => {
            for k in ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"] {
                if m.get(k).is_some_and(|v| !v.is_number()) {
                    return Err(format!(
                        "{}: keyword \"{k}\" is supported by the console only as a number",
                        at(ptr)
                    ));
                }
            }
            Ok(())
        }
        Some("boolean") => Ok(()),
        Some("object") => object(m, ptr, place),
        Some("array") => {
            count(m, ptr, &["minItems", "maxItems"])?;
            match m.get("items") {
                None => Err(format!(
                    "{}: an array needs keyword \"items\" (one schema) to be drawn by the console",
                    at(ptr)
                )),
                Some(Value::Array(_)) => Err(format!(
                    "{}: keyword \"items\" with a list of schemas is not supported by the console",
                    at(ptr)
                )),
                Some(items) => {
                    let iptr = format!("{ptr}/items");
                    if items.get("type").and_then(Value::as_str) == Some("array") {
                        return Err(format!(
                            "{iptr}: arrays of arrays are not supported by the console"
                        ));
                    }
                    node(items, &iptr, Place::Item)
                }
            }
        }
        Some(_) => unreachable!("refused above"),
    }
}

/// Keywords of JSON Schema that the console supports for some other type.
fn is_known_elsewhere(k: &str) -> bool {
    [
        "type",
        "format",
        "minLength",
        "maxLength",
        "pattern",
        "enum",
        "oneOf",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "minItems",
        "maxItems",
    ]
    .contains(&k)
}

fn annotations(m: &Map<String, Value>, ptr: &str) -> Result<(), String> {
    for k in ["title", "description"] {
        if m.get(k).is_some_and(|v| !v.is_string()) {
            return Err(format!("{}: keyword \"{k}\" must be a string", at(ptr)));
        }
    }
    if m.get("readOnly").is_some_and(|v| !v.is_boolean()) {
        return Err(format!("{}: keyword \"readOnly\" must be a boolean", at(ptr)));
    }
    Ok(())
}

fn count(m: &Map<String, Value>, ptr: &str, keys: &[&str]) -> Result<(), String> {
    for k in keys {
        if m.get(*k).is_some_and(|v| v.as_u64().is_none()) {
            return Err(format!(
                "{}: keyword \"{k}\" must be a non-negative integer",
                at(ptr)
            ));
        }
    }
    Ok(())
}

fn enumeration(e: &Value, ptr: &str) -> Result<(), String> {
    match e {
        Value::Array(values) if !values.is_empty() && values.iter().all(is_scalar) => Ok(()),
        Value::Array(values) if !values.is_empty() => Err(format!(
            "{}: keyword \"enum\" is supported by the console only with strings, numbers and booleans",
            at(ptr)
        )),
        _ => Err(format!("{}: keyword \"enum\" must be a non-empty array", at(ptr))),
    }
}

fn one_of(o: &Value, ptr: &str) -> Result<(), String> {
    let members = match o {
        Value::Array(a) if !a.is_empty() => a,
        _ => {
            return Err(format!(
                "{}: keyword \"oneOf\" must be a non-empty array",
                at(ptr)
            ))
        }
    };
    for (i, member) in members.iter().enumerate() {
        let mptr = format!("{ptr}/oneOf/{i}");
        let ok = member.as_object().is_some_and(|mm| {
            mm.get("const").is_some_and(is_scalar)
                && mm.get("title").is_none_or(Value::is_string)
                && mm.get("description").is_none_or(Value::is_string)
                && mm
                    .keys()
                    .all(|k| k == "const" || CONST_MEMBER.contains(&k.as_str()))
        });
        if !ok {
            return Err(format!(
                "{mptr}: keyword \"oneOf\" is supported by the console only as a list of {{\"const\", \"title\"}} choices"
            ));
        }
    }
    Ok(())
}

fn object(m: &Map<String, Value>, ptr: &str, place: Place) -> Result<(), String> {
    match m.get("additionalProperties") {
        None | Some(Value::Bool(_)) => {}
        Some(_) => {
            return Err(format!(
                "{}: keyword \"additionalProperties\" with a schema is not supported by the console (use true or false)",
                at(ptr)
            ))
        }
    }
    let props = match m.get("properties") {
        None => None,
        Some(Value::Object(p)) => Some(p),
        Some(_) => return Err(format!("{}: keyword \"properties\" must be an object", at(ptr))),
    };
    let required: Vec<&str> = match m.get("required") {
        None => vec![],
        Some(Value::Array(r)) if r.iter().all(Value::is_string) => {
            r.iter().filter_map(Value::as_str).collect()
        }
        Some(_) => {
            return Err(format!(
                "{}: keyword \"required\" must be an array of strings",
                at(ptr)
            ))
        }
    };
    let empty = Map::new();
    let props = match props {
        Some(p) if !p.is_empty() => p,
        // A nested object without properties is drawn as JSON text.
        _ if place != Place::Root => return Ok(()),
        _ => &empty,
    };
    for (name, child) in props {
        let cptr = format!("{ptr}/properties/{}", escape(name));
        if name.is_empty() || name.contains('.') {
            return Err(format!(
                "{cptr}: property name \"{name}\" is not supported by the console (names may not be empty or contain \".\")"
            ));
        }
        if place == Place::Root && name.starts_with('_') {
            return Err(format!(
                "{cptr}: property name \"{name}\" is reserved by the console (top-level names may not start with \"_\")"
            ));
        }
        node(child, &cptr, Place::Property)?;
    }
    if let Some(missing) = required.iter().find(|r| !props.contains_key(**r)) {
        return Err(format!(
            "{}: keyword \"required\" names \"{missing}\", which is not in \"properties\" (the console cannot draw it)",
            at(ptr)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refused(schema: Value) -> String {
        check(&schema).expect_err(&format!("accepted {schema}"))
    }

    fn obj(props: Value) -> Value {
        json!({"type": "object", "properties": props})
    }

    #[test]
    fn accepts_the_whole_subset() {
        let s = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "https://example.com/s",
            "$comment": "c",
            "type": "object",
            "title": "Answer",
            "description": "d",
            "additionalProperties": false,
            "required": ["name", "when"],
            "examples": [{"name": "x"}],
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 20, "pattern": "^[a-z]+$", "default": "x", "readOnly": false},
                "when": {"type": "string", "format": "date"},
                "at": {"type": "string", "format": "date-time"},
                "mail": {"type": "string", "format": "email"},
                "site": {"type": "string", "format": "uri"},
                "amount": {"type": "number", "minimum": 0, "maximum": 10.5, "exclusiveMinimum": 0, "exclusiveMaximum": 11},
                "count": {"type": "integer", "minimum": 1, "examples": [3]},
                "ok": {"type": "boolean", "default": true},
                "colour": {"type": "string", "enum": ["red", "green"]},
                "level": {"enum": [1, 2, 3]},
                "flag": {"type": "boolean", "enum": [true, false]},
                "kind": {"type": "string", "oneOf": [{"const": "a", "title": "A"}, {"const": "b"}]},
                "untyped": {"oneOf": [{"const": 1, "title": "One", "description": "d", "$comment": "c"}]},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 5},
                "levels": {"type": "array", "items": {"enum": ["a", "b"]}},
                "rows": {"type": "array", "items": {"type": "object", "required": ["q"], "properties": {
                    "q": {"type": "integer"},
                    "sub": {"type": "array", "items": {"type": "boolean"}}
                }}},
                "blobs": {"type": "array", "items": {"type": "object"}},
                "nested": {"type": "object", "properties": {"deep": {"type": "object", "properties": {"x": {"type": "string"}}}}},
                "free": {},
                "freeTitled": {"title": "Free", "description": "any JSON"},
                "alsoFree": true,
                "freeObject": {"type": "object", "additionalProperties": true},
                "ro": {"type": "string", "readOnly": true}
            }
        });
        check(&s).unwrap();
        check(&json!({"type": "object"})).unwrap();
    }

    #[test]
    fn refusals_name_pointer_and_keyword() {
        assert_eq!(
            refused(obj(json!({"items": {"type": "object", "patternProperties": {}}}))),
            "/properties/items: keyword \"patternProperties\" is not supported by the console"
        );
        assert_eq!(
            refused(json!({"type": "object", "allOf": []})),
            "/: keyword \"allOf\" is not supported by the console"
        );
        for (schema, needle) in [
            (
                obj(json!({"a": {"$ref": "#/x"}})),
                "/properties/a: keyword \"$ref\"",
            ),
            (
                obj(json!({"a": {"anyOf": [{"type": "string"}]}})),
                "/properties/a: keyword \"anyOf\"",
            ),
            (
                obj(json!({"a": {"type": "string", "const": "x"}})),
                "/properties/a: keyword \"const\"",
            ),
            (
                obj(json!({"a": {"type": "number", "multipleOf": 2}})),
                "keyword \"multipleOf\"",
            ),
            (
                obj(json!({"a": {"type": "array", "items": {"type": "string"}, "uniqueItems": true}})),
                "keyword \"uniqueItems\"",
            ),
            (
                obj(json!({"a": {"type": "string", "format": "ipv4"}})),
                "/properties/a: keyword \"format\" value \"ipv4\"",
            ),
            (
                obj(json!({"a": {"type": "number", "minLength": 1}})),
                "keyword \"minLength\" is not supported by the console for type \"number\"",
            ),
            (
                obj(json!({"a": {"type": "string", "minimum": 1}})),
                "keyword \"minimum\" is not supported by the console for type \"string\"",
            ),
            (
                obj(json!({"a": {"properties": {}}})),
                "keyword \"properties\" is not supported by the console without a \"type\"",
            ),
            (
                obj(json!({"a": {"type": ["string", "null"]}})),
                "/properties/a: keyword \"type\" with a list of types",
            ),
            (
                obj(json!({"a": {"type": "null"}})),
                "keyword \"type\" value \"null\"",
            ),
            (
                obj(json!({"a": {"enum": [{"x": 1}]}})),
                "/properties/a: keyword \"enum\" is supported by the console only with strings",
            ),
            (obj(json!({"a": {"enum": [null, "x"]}})), "keyword \"enum\""),
            (
                obj(json!({"a": {"oneOf": [{"type": "string"}]}})),
                "/properties/a/oneOf/0: keyword \"oneOf\"",
            ),
            (
                obj(json!({"a": {"oneOf": [{"const": "x", "type": "string"}]}})),
                "/properties/a/oneOf/0: keyword \"oneOf\"",
            ),
            (
                obj(json!({"a": {"enum": ["x"], "oneOf": [{"const": "x"}]}})),
                "keyword \"oneOf\" together with \"enum\"",
            ),
            (
                obj(json!({"a": {"type": "array"}})),
                "/properties/a: an array needs keyword \"items\"",
            ),
            (
                obj(json!({"a": {"type": "array", "items": [{"type": "string"}]}})),
                "keyword \"items\" with a list",
            ),
            (
                obj(json!({"a": {"type": "array", "items": {"type": "array", "items": {"type": "string"}}}})),
                "/properties/a/items: arrays of arrays",
            ),
            (
                obj(json!({"a": {"type": "array", "items": {}}})),
                "/properties/a/items: a schema without \"type\"",
            ),
            (
                obj(json!({"a": {"type": "array", "items": true}})),
                "/properties/a/items: only schema objects",
            ),
            (obj(json!({"a": false})), "/properties/a: only schema objects"),
            (
                obj(json!({"a": {"type": "object", "additionalProperties": {"type": "string"}}})),
                "keyword \"additionalProperties\" with a schema",
            ),
            (
                json!({"type": "object", "required": ["x"], "properties": {"y": {}}}),
                "/: keyword \"required\" names \"x\"",
            ),
            (
                json!({"type": "object", "required": ["x"]}),
                "/: keyword \"required\" names \"x\"",
            ),
            (
                obj(json!({"a.b": {"type": "string"}})),
                "/properties/a.b: property name \"a.b\"",
            ),
            (
                obj(json!({"_add": {"type": "string"}})),
                "/properties/_add: property name \"_add\" is reserved",
            ),
            (
                obj(json!({"a/b": {"type": "object", "properties": {"c": {"not": {}}}}})),
                "/properties/a~1b/properties/c: keyword \"not\"",
            ),
            (
                obj(json!({"a": {"type": "string", "title": 3}})),
                "keyword \"title\" must be a string",
            ),
            (
                obj(json!({"a": {"type": "string", "readOnly": "yes"}})),
                "keyword \"readOnly\" must be a boolean",
            ),
            (
                obj(json!({"a": {"type": "string", "writeOnly": true}})),
                "keyword \"writeOnly\"",
            ),
            (
                obj(json!({"a": {"type": "string", "x-widget": "slider"}})),
                "keyword \"x-widget\"",
            ),
            (json!({"type": "string"}), "/: the console draws only an object"),
            (json!({"type": "object", "$defs": {}}), "/: keyword \"$defs\""),
        ] {
            let m = refused(schema.clone());
            assert!(m.contains(needle), "{schema}: {m}");
        }
    }

    #[test]
    fn nested_underscore_names_and_odd_names_are_fine() {
        check(&obj(json!({"a": {"type": "object", "properties": {"_x": {"type": "string"}, "0": {"type": "string"}, "with space": {"type": "boolean"}}}}))).unwrap();
    }
}
