//! Schema → [`FieldNode`] tree, for a schema [`super::check`] accepted: the
//! subset is defined there once, and this only draws what it let through.

use super::Place;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One field of a form drawn from a JSON Schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldNode {
    /// The property name; `""` for the top level, `"*"` for an array's item template.
    pub name: String,
    /// Dotted path of the field, with `*` where an array index goes
    /// (`answers.contacts.*.email`); `""` for the top level. Concrete form
    /// names put the row index there (`answers.contacts.0.email`).
    pub path: String,
    /// `title`, or the property name humanized (`vendorName` → `Vendor name`);
    /// an array's item template falls back to the array's title.
    pub title: String,
    pub description: Option<String>,
    /// Listed in the parent's `required`.
    pub required: bool,
    pub default: Option<Value>,
    pub read_only: bool,
    pub kind: FieldKind,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum FieldKind {
    /// Required fields first (in the order of `required`), then the others.
    Object {
        fields: Vec<FieldNode>,
    },
    Text {
        format: Option<TextFormat>,
        min_length: Option<u64>,
        max_length: Option<u64>,
        pattern: Option<String>,
    },
    Number {
        integer: bool,
        min: Option<f64>,
        max: Option<f64>,
        exclusive_min: Option<f64>,
        exclusive_max: Option<f64>,
    },
    Boolean,
    /// `enum`, or `oneOf` of `const`s: (value, label).
    Select {
        options: Vec<(Value, String)>,
    },
    /// `item` is the row template (name `*`).
    Array {
        item: Box<FieldNode>,
        min: Option<u64>,
        max: Option<u64>,
    },
    /// Any JSON, edited as text: `{}`, or a nested object without `properties`.
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TextFormat {
    Date,
    DateTime,
    Email,
    Uri,
}

impl TextFormat {
    pub(super) fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "date" => TextFormat::Date,
            "date-time" => TextFormat::DateTime,
            "email" => TextFormat::Email,
            "uri" => TextFormat::Uri,
            _ => return None,
        })
    }
}

impl FieldNode {
    /// The fields of an object node (empty for other kinds).
    pub fn fields(&self) -> &[FieldNode] {
        match &self.kind {
            FieldKind::Object { fields } => fields,
            _ => &[],
        }
    }

    /// The direct child field called `name` of an object node.
    pub fn field(&self, name: &str) -> Option<&FieldNode> {
        self.fields().iter().find(|f| f.name == name)
    }

    /// Takes the direct child `name` out of an object node, e.g. an approval's
    /// `action`, which the page draws as buttons instead.
    pub fn remove_field(&mut self, name: &str) -> Option<FieldNode> {
        match &mut self.kind {
            FieldKind::Object { fields } => {
                let i = fields.iter().position(|f| f.name == name)?;
                Some(fields.remove(i))
            }
            _ => None,
        }
    }
}

/// `vendorName` → `Vendor name`, `cost_centre` → `Cost centre`, `userID` → `User ID`.
pub fn humanize(name: &str) -> String {
    let mut words: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut prev: Option<char> = None;
    for c in name.chars() {
        if c == '_' || c == '-' || c.is_whitespace() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            prev = None;
            continue;
        }
        let boundary = match prev {
            Some(p) => (p.is_lowercase() || p.is_ascii_digit()) && c.is_uppercase(),
            None => false,
        };
        if boundary && !cur.is_empty() {
            words.push(std::mem::take(&mut cur));
        }
        cur.push(c);
        prev = Some(c);
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    let mut out = String::new();
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let all_caps = w.chars().count() > 1 && w.chars().all(|c| !c.is_lowercase());
        if all_caps {
            out.push_str(w);
        } else if i == 0 {
            let mut cs = w.chars();
            if let Some(f) = cs.next() {
                out.extend(f.to_uppercase());
                out.push_str(&cs.as_str().to_lowercase());
            }
        } else {
            out.push_str(&w.to_lowercase());
        }
    }
    out
}

/// Builds the field tree of a schema, or says (pointer and keyword, see
/// [`super::check`]) why the console cannot draw it.
pub fn field_tree(schema: &Value) -> Result<FieldNode, String> {
    super::check(schema)?;
    Ok(build(schema, "", "", String::new(), Place::Root, false))
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

/// Draws a checked schema: every keyword it meets has the shape `check` requires.
fn build(
    schema: &Value,
    name: &str,
    path: &str,
    fallback_title: String,
    place: Place,
    required: bool,
) -> FieldNode {
    let mut node = FieldNode {
        name: name.to_string(),
        path: path.to_string(),
        title: fallback_title,
        description: None,
        required,
        default: None,
        read_only: false,
        kind: FieldKind::Json,
    };
    let Value::Object(m) = schema else {
        // `true` as a property: any JSON.
        return node;
    };
    if let Some(t) = m.get("title").and_then(Value::as_str) {
        node.title = t.to_string();
    }
    node.description = m.get("description").and_then(Value::as_str).map(str::to_string);
    node.read_only = m.get("readOnly").and_then(Value::as_bool).unwrap_or(false);
    node.default = m.get("default").cloned();

    if let Some(values) = m.get("enum").and_then(Value::as_array) {
        node.kind = FieldKind::Select {
            options: values.iter().map(|v| (v.clone(), scalar_label(v))).collect(),
        };
        return node;
    }
    if let Some(members) = m.get("oneOf").and_then(Value::as_array) {
        let options = members
            .iter()
            .map(|member| {
                let c = member["const"].clone();
                let label = member
                    .get("title")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or_else(|| scalar_label(&c));
                (c, label)
            })
            .collect();
        node.kind = FieldKind::Select { options };
        return node;
    }
    let count = |k: &str| m.get(k).and_then(Value::as_u64);
    let number = |k: &str| m.get(k).and_then(Value::as_f64);
    node.kind = match m.get("type").and_then(Value::as_str) {
        Some("string") => FieldKind::Text {
            format: m
                .get("format")
                .and_then(Value::as_str)
                .and_then(TextFormat::parse),
            min_length: count("minLength"),
            max_length: count("maxLength"),
            pattern: m.get("pattern").and_then(Value::as_str).map(str::to_string),
        },
        Some(t @ ("number" | "integer")) => FieldKind::Number {
            integer: t == "integer",
            min: number("minimum"),
            max: number("maximum"),
            exclusive_min: number("exclusiveMinimum"),
            exclusive_max: number("exclusiveMaximum"),
        },
        Some("boolean") => FieldKind::Boolean,
        Some("object") => object(m, path, place),
        Some("array") => {
            let item = build(
                &m["items"],
                "*",
                &join(path, "*"),
                node.title.clone(),
                Place::Item,
                false,
            );
            FieldKind::Array {
                item: Box::new(item),
                min: count("minItems"),
                max: count("maxItems"),
            }
        }
        // No type: free JSON (check allows it only for properties).
        _ => FieldKind::Json,
    };
    node
}

fn scalar_label(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn object(m: &Map<String, Value>, path: &str, place: Place) -> FieldKind {
    let props = match m.get("properties").and_then(Value::as_object) {
        Some(p) if !p.is_empty() => p,
        // A nested object without properties is drawn as JSON text.
        _ if place != Place::Root => return FieldKind::Json,
        _ => return FieldKind::Object { fields: vec![] },
    };
    let required: Vec<&str> = m
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut fields: Vec<FieldNode> = props
        .iter()
        .map(|(name, child)| {
            build(
                child,
                name,
                &join(path, name),
                humanize(name),
                Place::Property,
                required.contains(&name.as_str()),
            )
        })
        .collect();
    // Required fields first, in the order `required` lists them; then the rest.
    let mut ordered = Vec::with_capacity(fields.len());
    for r in &required {
        if let Some(i) = fields.iter().position(|f| f.name == *r) {
            ordered.push(fields.remove(i));
        }
    }
    ordered.append(&mut fields);
    FieldKind::Object { fields: ordered }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn humanizes_names() {
        assert_eq!(humanize("vendorName"), "Vendor name");
        assert_eq!(humanize("cost_centre"), "Cost centre");
        assert_eq!(humanize("cost-centre"), "Cost centre");
        assert_eq!(humanize("userID"), "User ID");
        assert_eq!(humanize("URL"), "URL");
        assert_eq!(humanize("q1"), "Q1");
        assert_eq!(humanize("editedArtifactData"), "Edited artifact data");
        assert_eq!(humanize(""), "");
    }

    #[test]
    fn builds_the_vendor_onboarding_tree() {
        let raw: Value =
            serde_json::from_str(include_str!("../../../demo/workflows/vendor-onboarding.json")).unwrap();
        let schema = &raw["nodes"][0]["config"]["resumeSchema"];
        let tree = field_tree(schema).unwrap();
        assert_eq!(tree.path, "");
        let answers = tree.field("answers").unwrap();
        assert!(answers.required);
        assert_eq!(answers.title, "Answers");
        let names: Vec<&str> = answers.fields().iter().map(|f| f.name.as_str()).collect();
        // Required first, in the order of `required`.
        assert_eq!(&names[..3], ["vendorName", "contractStart", "category"]);
        let category = answers.field("category").unwrap();
        assert_eq!(category.path, "answers.category");
        assert_eq!(
            category.kind,
            FieldKind::Select {
                options: vec![
                    (json!("software"), "Software".into()),
                    (json!("services"), "Professional services".into()),
                    (json!("hardware"), "Hardware".into()),
                ]
            }
        );
        let contacts = answers.field("contacts").unwrap();
        let FieldKind::Array { item, .. } = &contacts.kind else {
            panic!("{contacts:?}")
        };
        assert_eq!(item.path, "answers.contacts.*");
        assert_eq!(item.title, "Contacts");
        assert_eq!(item.field("email").unwrap().path, "answers.contacts.*.email");
        assert!(matches!(
            item.field("email").unwrap().kind,
            FieldKind::Text {
                format: Some(TextFormat::Email),
                ..
            }
        ));
        assert_eq!(
            answers.field("dataProcessing").unwrap().default,
            Some(json!(false))
        );
    }

    #[test]
    fn free_json_fields_and_empty_roots() {
        let t = field_tree(&json!({"type": "object", "properties": {
            "editedArtifactData": {}, "refineFeedback": {"type": "object"}, "anything": true
        }}))
        .unwrap();
        for f in t.fields() {
            assert_eq!(f.kind, FieldKind::Json, "{}", f.name);
        }
        let root = field_tree(&json!({"type": "object", "additionalProperties": true})).unwrap();
        assert_eq!(root.kind, FieldKind::Object { fields: vec![] });
        assert!(field_tree(&json!({"type": "string"})).is_err());
    }

    #[test]
    fn refusals_name_pointer_and_keyword() {
        let e =
            field_tree(&json!({"type": "object", "properties": {"a": {"type": "string", "format": "ipv4"}}}))
                .unwrap_err();
        assert!(
            e.starts_with("/properties/a: keyword \"format\" value \"ipv4\""),
            "{e}"
        );
        let e = field_tree(&json!({"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"allOf": []}}}}}))
            .unwrap_err();
        assert!(
            e.starts_with("/properties/a/properties/b: keyword \"allOf\""),
            "{e}"
        );
    }

    #[test]
    fn remove_field_takes_a_child_out() {
        let mut t = field_tree(&json!({"type": "object", "required": ["action"], "properties": {
            "action": {"type": "string", "enum": ["accept", "reject"]}, "comment": {"type": "string"}
        }}))
        .unwrap();
        assert_eq!(t.remove_field("action").unwrap().name, "action");
        assert_eq!(t.fields().len(), 1);
        assert!(t.remove_field("action").is_none());
    }

    /// Drawing trusts `check`: every schema it accepts draws without a
    /// panic, every one it refuses is refused with its message.
    #[test]
    fn draws_whatever_check_accepts() {
        let mut corpus = vec![json!({"type": "object", "additionalProperties": true})];
        for dir in ["../demo/workflows", "../workflows/conformance"] {
            let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.extension().is_none_or(|x| x != "json") {
                    continue;
                }
                let raw: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
                for node in raw["nodes"].as_array().unwrap() {
                    for k in ["requestSchema", "resumeSchema"] {
                        if let Some(s) = node["config"].get(k) {
                            corpus.push(s.clone());
                        }
                    }
                }
            }
        }
        let props = [
            json!({}),
            json!(true),
            json!(false),
            json!(null),
            json!({"title": "t", "description": "d", "default": 1, "readOnly": true, "$comment": "c", "examples": [1]}),
            json!({"type": "string"}),
            json!({"type": "string", "format": "date"}),
            json!({"type": "string", "format": "date-time"}),
            json!({"type": "string", "format": "email"}),
            json!({"type": "string", "format": "uri"}),
            json!({"type": "string", "format": "ipv4"}),
            json!({"type": "string", "format": 3}),
            json!({"type": "string", "minLength": 1, "maxLength": 3, "pattern": "^a"}),
            json!({"type": "string", "minLength": -1}),
            json!({"type": "string", "minLength": 1.5}),
            json!({"type": "string", "pattern": 3}),
            json!({"type": "string", "minimum": 1}),
            json!({"type": "string", "const": "x"}),
            json!({"type": "number", "minimum": 0, "maximum": 1.5, "exclusiveMinimum": 0, "exclusiveMaximum": 2}),
            json!({"type": "number", "minimum": "0"}),
            json!({"type": "number", "exclusiveMinimum": true}),
            json!({"type": "number", "multipleOf": 2}),
            json!({"type": "integer", "minLength": 2}),
            json!({"type": "integer", "enum": [1, 2]}),
            json!({"type": "boolean"}),
            json!({"type": "boolean", "default": true}),
            json!({"type": "boolean", "format": "date"}),
            json!({"type": "null"}),
            json!({"type": ["string", "null"]}),
            json!({"type": 5}),
            json!({"enum": ["a", 1, true]}),
            json!({"enum": []}),
            json!({"enum": "a"}),
            json!({"enum": [null]}),
            json!({"enum": [[1]]}),
            json!({"enum": ["a"], "oneOf": [{"const": "a"}]}),
            json!({"oneOf": [{"const": "a", "title": "A"}, {"const": 2}]}),
            json!({"type": "string", "oneOf": [{"const": "a", "title": "A", "description": "d", "$comment": "c"}]}),
            json!({"oneOf": []}),
            json!({"oneOf": [{"const": "a", "title": 1}]}),
            json!({"oneOf": [{"const": {"x": 1}}]}),
            json!({"oneOf": [{"title": "no const"}]}),
            json!({"oneOf": [{"const": "a", "type": "string"}]}),
            json!({"oneOf": [{"type": "string"}, {"type": "number"}]}),
            json!({"anyOf": [{"const": "a"}]}),
            json!({"allOf": []}),
            json!({"not": {}}),
            json!({"$ref": "#/$defs/x"}),
            json!({"if": {}, "then": {}}),
            json!({"const": "x"}),
            json!({"writeOnly": true}),
            json!({"deprecated": true}),
            json!({"x-ui": "slider"}),
            json!({"title": 3}),
            json!({"description": false}),
            json!({"readOnly": "yes"}),
            json!({"properties": {"a": {"type": "string"}}}),
            json!({"type": "object"}),
            json!({"type": "object", "properties": {}}),
            json!({"type": "object", "required": ["a"]}),
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}),
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]}),
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": "a"}),
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false}),
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}}),
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "patternProperties": {}}),
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "minProperties": 1}),
            json!({"type": "object", "properties": {"a.b": {"type": "string"}}}),
            json!({"type": "object", "properties": {"": {"type": "string"}}}),
            json!({"type": "object", "properties": {"_a": {"type": "string"}}}),
            json!({"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "array", "items": {"type": "string"}}}}}}),
            json!({"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"not": {}}}}}}),
            json!({"type": "object", "properties": 3}),
            json!({"type": "array", "items": {"type": "string"}}),
            json!({"type": "array", "items": {"type": "string", "format": "email"}, "minItems": 1, "maxItems": 3}),
            json!({"type": "array", "items": {"type": "integer"}, "minItems": "1"}),
            json!({"type": "array", "items": {"enum": ["a", "b"]}}),
            json!({"type": "array", "items": {"oneOf": [{"const": "a"}]}}),
            json!({"type": "array", "items": {"type": "object", "required": ["n"], "properties": {"n": {"type": "string"}, "m": {}}}}),
            json!({"type": "array", "items": {"type": "object"}}),
            json!({"type": "array", "items": {"type": "object", "properties": {"_n": {"type": "string"}}}}),
            json!({"type": "array", "items": {"type": "object", "properties": {"n": {"type": "string", "format": "hostname"}}}}),
            json!({"type": "array", "items": {"type": "array", "items": {"type": "string"}}}),
            json!({"type": "array", "items": {}}),
            json!({"type": "array", "items": true}),
            json!({"type": "array", "items": [{"type": "string"}]}),
            json!({"type": "array"}),
            json!({"type": "array", "items": {"type": "string"}, "uniqueItems": true}),
            json!({"type": "array", "items": {"type": "string"}, "contains": {"const": "a"}}),
        ];
        for p in &props {
            corpus.push(json!({"type": "object", "properties": {"p": p}}));
            corpus.push(json!({"type": "object", "required": ["p"], "properties": {"p": p}}));
            corpus.push(
                json!({"type": "object", "properties": {"o": {"type": "object", "properties": {"p": p}}}}),
            );
            corpus.push(json!({"type": "object", "properties": {"rows": {"type": "array", "items": p}}}));
            corpus.push(p.clone());
        }
        corpus.push(json!({"type": "object", "$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "x", "title": "T", "properties": {"a": {"type": "string"}}}));
        corpus.push(json!({"type": "object", "$defs": {}}));
        corpus.push(
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "dependentRequired": {}}),
        );
        let mut accepted = 0;
        for s in &corpus {
            let checked = super::super::check(s);
            let drawn = field_tree(s);
            assert_eq!(checked.clone().err(), drawn.clone().err(), "{s}");
            if let Ok(tree) = drawn {
                assert_eq!(tree.path, "", "{s}");
            }
            accepted += usize::from(checked.is_ok());
        }
        assert!(
            accepted > 50 && accepted < corpus.len() - 50,
            "{accepted} of {}",
            corpus.len()
        );
    }
}
