//! Schema → [`FieldNode`] tree. Accepts exactly the subset the engine's
//! `tollgate::schema_subset::check` accepts (a test keeps the two in step).

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
    fn parse(s: &str) -> Option<Self> {
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

#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    Root,
    Property,
    Item,
}

const ANNOTATIONS: [&str; 8] = [
    "title",
    "description",
    "default",
    "readOnly",
    "$schema",
    "$id",
    "$comment",
    "examples",
];

fn at(ptr: &str) -> &str {
    if ptr.is_empty() {
        "/"
    } else {
        ptr
    }
}

fn is_scalar(v: &Value) -> bool {
    matches!(v, Value::String(_) | Value::Number(_) | Value::Bool(_))
}

/// Builds the field tree of a schema, or says (pointer and keyword) why the
/// console cannot draw it.
pub fn field_tree(schema: &Value) -> Result<FieldNode, String> {
    build(schema, "", "", "", String::new(), Place::Root, false)
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

fn build(
    schema: &Value,
    ptr: &str,
    name: &str,
    path: &str,
    fallback_title: String,
    place: Place,
    required: bool,
) -> Result<FieldNode, String> {
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
    let m = match schema {
        Value::Object(m) => m,
        Value::Bool(true) if place == Place::Property => return Ok(node),
        _ => return Err(format!("{}: only schema objects can be drawn", at(ptr))),
    };
    match m.get("title") {
        None => {}
        Some(Value::String(t)) => node.title = t.clone(),
        Some(_) => return Err(format!("{}: \"title\" must be a string", at(ptr))),
    }
    match m.get("description") {
        None => {}
        Some(Value::String(d)) => node.description = Some(d.clone()),
        Some(_) => return Err(format!("{}: \"description\" must be a string", at(ptr))),
    }
    match m.get("readOnly") {
        None => {}
        Some(Value::Bool(b)) => node.read_only = *b,
        Some(_) => return Err(format!("{}: \"readOnly\" must be a boolean", at(ptr))),
    }
    node.default = m.get("default").cloned();

    let ty = match m.get("type") {
        None => None,
        Some(Value::String(t)) => Some(t.as_str()),
        Some(_) => return Err(format!("{}: keyword \"type\" must be one type name", at(ptr))),
    };
    if place == Place::Root && ty != Some("object") {
        return Err(format!("{}: the top level must be \"type\": \"object\"", at(ptr)));
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
        Some(other) => return Err(format!("{}: type \"{other}\" cannot be drawn", at(ptr))),
    };
    if let Some(k) = m
        .keys()
        .find(|k| !ANNOTATIONS.contains(&k.as_str()) && !allowed.contains(&k.as_str()))
    {
        return Err(format!("{}: keyword \"{k}\" cannot be drawn", at(ptr)));
    }
    if m.contains_key("enum") && m.contains_key("oneOf") {
        return Err(format!(
            "{}: \"enum\" and \"oneOf\" together cannot be drawn",
            at(ptr)
        ));
    }
    if let Some(e) = m.get("enum") {
        let values = e
            .as_array()
            .filter(|a| !a.is_empty() && a.iter().all(is_scalar))
            .ok_or_else(|| format!("{}: \"enum\" must list strings, numbers or booleans", at(ptr)))?;
        node.kind = FieldKind::Select {
            options: values.iter().map(|v| (v.clone(), scalar_label(v))).collect(),
        };
        return Ok(node);
    }
    if let Some(o) = m.get("oneOf") {
        let members = o
            .as_array()
            .filter(|a| !a.is_empty())
            .ok_or_else(|| format!("{}: \"oneOf\" must be a non-empty array", at(ptr)))?;
        let mut options = Vec::with_capacity(members.len());
        for (i, member) in members.iter().enumerate() {
            let bad = || format!("{ptr}/oneOf/{i}: \"oneOf\" members must be {{\"const\", \"title\"}}");
            let mm = member.as_object().ok_or_else(bad)?;
            let c = mm.get("const").filter(|c| is_scalar(c)).ok_or_else(bad)?;
            if mm
                .keys()
                .any(|k| !["const", "title", "description", "$comment"].contains(&k.as_str()))
                || mm.get("description").is_some_and(|d| !d.is_string())
            {
                return Err(bad());
            }
            let label = match mm.get("title") {
                None => scalar_label(c),
                Some(Value::String(t)) => t.clone(),
                Some(_) => return Err(bad()),
            };
            options.push((c.clone(), label));
        }
        node.kind = FieldKind::Select { options };
        return Ok(node);
    }
    node.kind = match ty {
        None if place == Place::Property => FieldKind::Json,
        None => {
            return Err(format!(
                "{}: a schema without \"type\" cannot be drawn here",
                at(ptr)
            ))
        }
        Some("string") => {
            let format = match m.get("format") {
                None => None,
                Some(f) => Some(
                    f.as_str()
                        .and_then(TextFormat::parse)
                        .ok_or_else(|| format!("{}: format {f} cannot be drawn", at(ptr)))?,
                ),
            };
            FieldKind::Text {
                format,
                min_length: count(m, ptr, "minLength")?,
                max_length: count(m, ptr, "maxLength")?,
                pattern: match m.get("pattern") {
                    None => None,
                    Some(Value::String(p)) => Some(p.clone()),
                    Some(_) => return Err(format!("{}: \"pattern\" must be a string", at(ptr))),
                },
            }
        }
        Some(t @ ("number" | "integer")) => FieldKind::Number {
            integer: t == "integer",
            min: number(m, ptr, "minimum")?,
            max: number(m, ptr, "maximum")?,
            exclusive_min: number(m, ptr, "exclusiveMinimum")?,
            exclusive_max: number(m, ptr, "exclusiveMaximum")?,
        },
        Some("boolean") => FieldKind::Boolean,
        Some("object") => object(m, ptr, path, place)?,
        Some("array") => {
            let (min, max) = (count(m, ptr, "minItems")?, count(m, ptr, "maxItems")?);
            let items = match m.get("items") {
                Some(items @ Value::Object(_)) => items,
                Some(Value::Bool(_)) => return Err(format!("{ptr}/items: only schema objects can be drawn")),
                _ => return Err(format!("{}: an array needs one \"items\" schema", at(ptr))),
            };
            if items.get("type").and_then(Value::as_str) == Some("array") {
                return Err(format!("{ptr}/items: arrays of arrays cannot be drawn"));
            }
            let item = build(
                items,
                &format!("{ptr}/items"),
                "*",
                &join(path, "*"),
                node.title.clone(),
                Place::Item,
                false,
            )?;
            FieldKind::Array {
                item: Box::new(item),
                min,
                max,
            }
        }
        Some(_) => unreachable!("refused above"),
    };
    Ok(node)
}

fn scalar_label(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn count(m: &Map<String, Value>, ptr: &str, k: &str) -> Result<Option<u64>, String> {
    match m.get(k) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| format!("{}: \"{k}\" must be a non-negative integer", at(ptr))),
    }
}

fn number(m: &Map<String, Value>, ptr: &str, k: &str) -> Result<Option<f64>, String> {
    match m.get(k) {
        None => Ok(None),
        Some(v) => v
            .as_f64()
            .map(Some)
            .ok_or_else(|| format!("{}: \"{k}\" must be a number", at(ptr))),
    }
}

fn object(m: &Map<String, Value>, ptr: &str, path: &str, place: Place) -> Result<FieldKind, String> {
    if m.get("additionalProperties").is_some_and(|a| !a.is_boolean()) {
        return Err(format!(
            "{}: \"additionalProperties\" must be true or false",
            at(ptr)
        ));
    }
    let props = match m.get("properties") {
        None => None,
        Some(Value::Object(p)) => Some(p),
        Some(_) => return Err(format!("{}: \"properties\" must be an object", at(ptr))),
    };
    let required: Vec<&str> = match m.get("required") {
        None => vec![],
        Some(Value::Array(r)) if r.iter().all(Value::is_string) => {
            r.iter().filter_map(Value::as_str).collect()
        }
        Some(_) => return Err(format!("{}: \"required\" must list names", at(ptr))),
    };
    let empty = Map::new();
    let props = match props {
        Some(p) if !p.is_empty() => p,
        _ if place != Place::Root => return Ok(FieldKind::Json),
        _ => &empty,
    };
    let mut fields = Vec::with_capacity(props.len());
    for (name, child) in props {
        let cptr = format!("{ptr}/properties/{}", name.replace('~', "~0").replace('/', "~1"));
        if name.is_empty() || name.contains('.') || (place == Place::Root && name.starts_with('_')) {
            return Err(format!(
                "{cptr}: property name \"{name}\" cannot be a form field name"
            ));
        }
        fields.push(build(
            child,
            &cptr,
            name,
            &join(path, name),
            humanize(name),
            Place::Property,
            required.contains(&name.as_str()),
        )?);
    }
    if let Some(missing) = required.iter().find(|r| !props.contains_key(**r)) {
        return Err(format!(
            "{}: \"required\" names \"{missing}\", which is not in \"properties\"",
            at(ptr)
        ));
    }
    // Required fields first, in the order `required` lists them; then the rest.
    let mut ordered = Vec::with_capacity(fields.len());
    for r in &required {
        if let Some(i) = fields.iter().position(|f| f.name == *r) {
            ordered.push(fields.remove(i));
        }
    }
    ordered.append(&mut fields);
    Ok(FieldKind::Object { fields: ordered })
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
        assert!(e.starts_with("/properties/a: format \"ipv4\""), "{e}");
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

    /// The console draws exactly what the engine accepts.
    #[cfg(feature = "ssr")]
    #[test]
    fn agrees_with_the_engine_subset_check() {
        let mut corpus = vec![
            tollgate::contract::object_schema(),
            tollgate::definition::approval_resume_schema(&[
                "accept".into(),
                "reject".into(),
                "refine".into(),
            ]),
        ];
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
            let engine = tollgate::schema_subset::check(s);
            let console = field_tree(s);
            assert_eq!(
                engine.is_ok(),
                console.is_ok(),
                "{s}\nengine: {engine:?}\nconsole: {console:?}"
            );
            accepted += usize::from(engine.is_ok());
        }
        assert!(
            accepted > 50 && accepted < corpus.len() - 50,
            "{accepted} of {}",
            corpus.len()
        );
    }
}
