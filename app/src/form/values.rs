//! Form values ↔ JSON.
//!
//! A form's inputs are named by dotted paths with row indices
//! (`comment`, `answers.vendorName`, `answers.contacts.0.email`). Each array
//! also carries a hidden input named by its own path whose value is the
//! number of rows drawn (`answers.contacts` = `2`), so a row survives even
//! when none of its inputs submits anything (an unchecked checkbox).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};
use std::collections::{BTreeSet, HashMap};
use tollgate_wire::schema_subset::{FieldKind, FieldNode, TextFormat};

use super::dates::{datetime_from_input, datetime_to_input, parse_date};

/// Field values keyed by form name, as drawn and as submitted.
pub type FormValues = HashMap<String, String>;

/// The name of the submit button that adds a row; its value is the array's path.
pub const ADD_ROW: &str = "_add";
/// The name of the submit button that removes a row; its value is the row's path (`contacts.1`).
pub const REMOVE_ROW: &str = "_remove";

/// More rows than this are never read from a submission.
const MAX_ROWS: usize = 1000;
/// Rows a whole form holds over all its lists, read or drawn: a list inside
/// a list multiplies, so a few declared row counts could otherwise ask for
/// millions. Two full lists fit.
pub const MAX_FORM_ROWS: usize = 2 * MAX_ROWS;

/// A submitted value that could not be turned into JSON, named by its form path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FormError {
    pub path: String,
    pub message: String,
}

/// An "add row" or "remove row" button press (the form is drawn again, not resolved).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowAction {
    Add { array: String },
    Remove { array: String, index: usize },
}

pub(crate) fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

/// The value an option of a `<select>` carries: a string as itself, anything else as JSON.
pub fn option_value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Submitted pairs as a map (the last of repeated names wins).
pub fn values_from_fields(fields: &[(String, String)]) -> FormValues {
    fields.iter().cloned().collect()
}

/// Turns submitted form fields back into JSON. Numbers are parsed, checkboxes
/// become booleans, empty text, numbers and choices are left out, arrays are
/// rebuilt from their indexed rows (gaps and removed rows tolerated, blank rows
/// dropped), JSON fields are parsed, read-only fields are ignored, and a
/// nested object nobody filled in is left out unless it is required.
/// Names the tree does not know (buttons, tokens) are ignored.
pub fn form_to_json(tree: &FieldNode, fields: &[(String, String)]) -> Result<Value, Vec<FormError>> {
    let values = values_from_fields(fields);
    let mut errors = Vec::new();
    let mut rows_left = MAX_FORM_ROWS;
    let (value, _) = convert(tree, "", &values, &mut errors, &mut rows_left, true);
    if errors.is_empty() {
        Ok(value.unwrap_or_else(|| Value::Object(Map::new())))
    } else {
        Err(errors)
    }
}

/// Returns the value (if any) and whether the person entered something.
fn convert(
    node: &FieldNode,
    path: &str,
    values: &FormValues,
    errors: &mut Vec<FormError>,
    rows_left: &mut usize,
    root: bool,
) -> (Option<Value>, bool) {
    if node.read_only {
        return (None, false);
    }
    let mut error = |message: String| {
        errors.push(FormError {
            path: path.to_string(),
            message,
        })
    };
    let raw = values.get(path).map(String::as_str);
    match &node.kind {
        FieldKind::Object { fields } => {
            let mut map = Map::new();
            let mut touched = false;
            for f in fields {
                let (v, t) = convert(f, &join(path, &f.name), values, errors, rows_left, false);
                touched |= t;
                if let Some(v) = v {
                    map.insert(f.name.clone(), v);
                }
            }
            if touched || node.required || root {
                (Some(Value::Object(map)), touched)
            } else {
                (None, false)
            }
        }
        FieldKind::Text { format, .. } => {
            let Some(s) = raw.filter(|s| !s.is_empty()) else {
                return (None, false);
            };
            let text = match format {
                Some(TextFormat::DateTime) => match datetime_from_input(s) {
                    Some(t) => t,
                    None => {
                        error("Enter a date and time, like 2024-05-01T14:30.".into());
                        return (None, true);
                    }
                },
                Some(TextFormat::Date) if parse_date(s.trim()).is_none() => {
                    error("Enter a date, like 2024-05-01.".into());
                    return (None, true);
                }
                Some(TextFormat::Date) => s.trim().to_string(),
                Some(TextFormat::Email) if !looks_like_email(s.trim()) => {
                    error("Enter an email address, like name@example.com.".into());
                    return (None, true);
                }
                Some(TextFormat::Uri) if !looks_like_uri(s.trim()) => {
                    error("Enter a full address, like https://example.com.".into());
                    return (None, true);
                }
                Some(TextFormat::Email | TextFormat::Uri) => s.trim().to_string(),
                None => s.to_string(),
            };
            (Some(Value::String(text)), true)
        }
        FieldKind::Number { integer, .. } => {
            let Some(s) = raw.map(str::trim).filter(|s| !s.is_empty()) else {
                return (None, false);
            };
            let parsed = match s.parse::<i64>() {
                Ok(i) => Some(Number::from(i)),
                Err(_) if *integer => None,
                Err(_) => s
                    .parse::<f64>()
                    .ok()
                    .filter(|f| f.is_finite())
                    .and_then(Number::from_f64),
            };
            match parsed {
                Some(n) => (Some(Value::Number(n)), true),
                None => {
                    error(if *integer {
                        format!("Enter a whole number (not \"{s}\").")
                    } else {
                        format!("Enter a number (not \"{s}\").")
                    });
                    (None, true)
                }
            }
        }
        FieldKind::Boolean => match raw.map(str::trim) {
            Some("true" | "on") => (Some(Value::Bool(true)), true),
            None | Some("" | "false" | "off") => (Some(Value::Bool(false)), false),
            Some(other) => {
                error(format!("Expected a checkbox value (not \"{other}\")."));
                (None, true)
            }
        },
        FieldKind::Select { options } => {
            let Some(s) = raw.filter(|s| !s.is_empty()) else {
                return (None, false);
            };
            match options.iter().find(|(v, _)| option_value(v) == s) {
                Some((v, _)) => (Some(v.clone()), true),
                None => {
                    error(format!("Choose one of the listed options (not \"{s}\")."));
                    (None, true)
                }
            }
        }
        FieldKind::Json => {
            let Some(s) = raw.map(str::trim).filter(|s| !s.is_empty()) else {
                return (None, false);
            };
            match serde_json::from_str::<Value>(s) {
                Ok(v) => (Some(v), true),
                Err(e) => {
                    error(format!("Enter valid JSON ({e})."));
                    (None, true)
                }
            }
        }
        FieldKind::Array { item, .. } => {
            let keep_untouched = matches!(item.kind, FieldKind::Boolean);
            let mut rows = Vec::new();
            for i in submitted_rows(values, path) {
                if *rows_left == 0 {
                    let message = format!("This form holds at most {MAX_FORM_ROWS} rows in all its lists.");
                    // Said once, at the first list past the budget.
                    if !errors.iter().any(|e| e.message == message) {
                        errors.push(FormError {
                            path: path.to_string(),
                            message,
                        });
                    }
                    return (None, true);
                }
                *rows_left -= 1;
                let (v, touched) = convert(
                    item,
                    &join(path, &i.to_string()),
                    values,
                    errors,
                    rows_left,
                    false,
                );
                if let Some(v) = v.filter(|_| touched || keep_untouched) {
                    rows.push(v);
                }
            }
            let touched = !rows.is_empty();
            if touched || node.required {
                (Some(Value::Array(rows)), touched)
            } else {
                (None, false)
            }
        }
    }
}

/// Row indices present under `path`: those below the hidden row count and
/// those named by any submitted field.
fn submitted_rows(values: &FormValues, path: &str) -> BTreeSet<usize> {
    let declared = values
        .get(path)
        .and_then(|n| n.trim().parse::<usize>().ok())
        .unwrap_or(0)
        .min(MAX_ROWS);
    let mut rows: BTreeSet<usize> = (0..declared).collect();
    let prefix = format!("{path}.");
    rows.extend(values.keys().filter_map(|key| row_of(key, &prefix)));
    rows
}

/// The row of the list whose inputs start with `prefix` (`contacts.`) that
/// `key` belongs to (`contacts.2.email` → 2), if any and below [`MAX_ROWS`].
pub(crate) fn row_of(key: &str, prefix: &str) -> Option<usize> {
    let seg = key.strip_prefix(prefix)?.split('.').next()?;
    seg.parse::<usize>()
        .ok()
        .filter(|&i| i < MAX_ROWS && seg == i.to_string())
}

/// How many rows to draw for the array at `path`: enough for every row in
/// `values`, and at least `min`.
pub fn row_count(values: &FormValues, path: &str, min: Option<u64>) -> usize {
    let seen = submitted_rows(values, path).last().map_or(0, |i| i + 1);
    seen.max(min.unwrap_or(0).min(MAX_ROWS as u64) as usize)
}

/// Form values that show `value` in the form drawn from `tree`: to pre-fill
/// defaults or an existing answer, or to show a person's input again.
pub fn json_to_values(tree: &FieldNode, value: &Value) -> FormValues {
    let mut out = FormValues::new();
    fill(tree, "", value, &mut out);
    out
}

fn fill(node: &FieldNode, path: &str, value: &Value, out: &mut FormValues) {
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match (&node.kind, value) {
        (FieldKind::Object { fields }, Value::Object(m)) => {
            for f in fields {
                if let Some(v) = m.get(&f.name) {
                    fill(f, &join(path, &f.name), v, out);
                }
            }
        }
        (FieldKind::Array { item, .. }, Value::Array(rows)) => {
            out.insert(path.to_string(), rows.len().to_string());
            for (i, v) in rows.iter().enumerate() {
                fill(item, &join(path, &i.to_string()), v, out);
            }
        }
        (
            FieldKind::Text {
                format: Some(TextFormat::DateTime),
                ..
            },
            Value::String(s),
        ) => {
            out.insert(
                path.to_string(),
                datetime_to_input(s).unwrap_or_else(|| s.clone()),
            );
        }
        (FieldKind::Boolean, Value::Bool(b)) => {
            out.insert(path.to_string(), b.to_string());
        }
        (FieldKind::Json, v) => {
            out.insert(
                path.to_string(),
                serde_json::to_string_pretty(v).unwrap_or_default(),
            );
        }
        (FieldKind::Select { .. }, v) => {
            out.insert(path.to_string(), option_value(v));
        }
        (FieldKind::Object { .. } | FieldKind::Array { .. }, _) => {}
        (_, Value::Null) => {}
        (_, v) => {
            out.insert(path.to_string(), text(v));
        }
    }
}

/// The defaults of `tree` as one JSON value (a property's own `default`
/// fills what its parent's `default` leaves out).
pub fn default_value(tree: &FieldNode) -> Option<Value> {
    match &tree.kind {
        FieldKind::Object { fields } => {
            let mut map = match &tree.default {
                Some(Value::Object(m)) => m.clone(),
                Some(other) => return Some(other.clone()),
                None => Map::new(),
            };
            for f in fields {
                if !map.contains_key(&f.name) {
                    if let Some(v) = default_value(f) {
                        map.insert(f.name.clone(), v);
                    }
                }
            }
            (!map.is_empty() || tree.default.is_some()).then_some(Value::Object(map))
        }
        _ => tree.default.clone(),
    }
}

/// The form values of a fresh form: every default filled in.
pub fn default_values(tree: &FieldNode) -> FormValues {
    default_value(tree)
        .map(|v| json_to_values(tree, &v))
        .unwrap_or_default()
}

/// The field at a concrete path (`answers.contacts.1.email`), if the tree has one.
pub fn locate<'a>(tree: &'a FieldNode, path: &str) -> Option<&'a FieldNode> {
    if path.is_empty() {
        return Some(tree);
    }
    let mut node = tree;
    for seg in path.split('.') {
        node = match &node.kind {
            FieldKind::Object { fields } => fields.iter().find(|f| f.name == seg)?,
            FieldKind::Array { item, .. } if seg.parse::<usize>().is_ok() => item,
            _ => return None,
        };
    }
    Some(node)
}

/// `/answers/contacts/0/email` → `answers.contacts.0.email` (a JSON pointer,
/// as in the engine's validation details, to a form path).
pub fn pointer_to_path(pointer: &str) -> String {
    pointer
        .split('/')
        .skip(1)
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect::<Vec<_>>()
        .join(".")
}

/// `resumeValue.contacts[0].email` → `contacts.0.email`: a field the engine
/// names in a validation error, as a form path (`resumeValue` itself is the
/// whole form, `""`); `None` for a field outside the resume value.
pub fn resume_field_to_path(field: &str) -> Option<String> {
    let rest = field.strip_prefix("resumeValue")?;
    if !(rest.is_empty() || rest.starts_with('.') || rest.starts_with('[')) {
        return None;
    }
    let path = rest.replace('[', ".").replace(']', "");
    Some(path.trim_start_matches('.').to_string())
}

/// Puts each (path, message) beside the closest field the form draws (an
/// error inside a JSON field goes to that field; one the tree does not know
/// goes to the top, path `""`). Messages for the same field are joined.
pub fn errors_for_form(
    tree: &FieldNode,
    errors: impl IntoIterator<Item = (String, String)>,
) -> HashMap<String, String> {
    let mut out: HashMap<String, String> = HashMap::new();
    for (path, message) in errors {
        let mut p = path.as_str();
        while !p.is_empty() && locate(tree, p).is_none() {
            p = p.rsplit_once('.').map_or("", |(head, _)| head);
        }
        out.entry(p.to_string())
            .and_modify(|m| {
                m.push(' ');
                m.push_str(&message);
            })
            .or_insert(message);
    }
    out
}

/// The add/remove row button pressed in a submission, if any.
pub fn row_action(fields: &[(String, String)]) -> Option<RowAction> {
    for (name, value) in fields {
        if name == ADD_ROW {
            return Some(RowAction::Add { array: value.clone() });
        }
        if name == REMOVE_ROW {
            let (array, index) = value.rsplit_once('.')?;
            return Some(RowAction::Remove {
                array: array.to_string(),
                index: index.parse().ok()?,
            });
        }
    }
    None
}

/// Adds or removes a row in `values` (a new row gets the item's defaults;
/// later rows move up when one is removed). Refuses to go past `maxItems` or
/// below `minItems`.
pub fn apply_row_action(tree: &FieldNode, values: &mut FormValues, action: &RowAction) -> Result<(), String> {
    let array = match action {
        RowAction::Add { array } | RowAction::Remove { array, .. } => array,
    };
    let node = locate(tree, array).ok_or_else(|| format!("no field \"{array}\""))?;
    let FieldKind::Array { item, min, max } = &node.kind else {
        return Err(format!("\"{array}\" is not a list"));
    };
    if node.read_only {
        return Err(format!("\"{array}\" is read-only"));
    }
    let n = row_count(values, array, *min);
    match action {
        RowAction::Add { .. } => {
            if max.is_some_and(|m| n as u64 >= m) || n >= MAX_ROWS {
                return Err(format!("\"{array}\" has the most rows it may have"));
            }
            values.insert(array.clone(), (n + 1).to_string());
            if let Some(d) = default_value(item) {
                let mut row = FormValues::new();
                fill(item, &join(array, &n.to_string()), &d, &mut row);
                values.extend(row);
            }
        }
        RowAction::Remove { index, .. } => {
            if *index >= n {
                return Err(format!("\"{array}\" has no row {index}"));
            }
            if min.is_some_and(|m| n as u64 <= m) {
                return Err(format!("\"{array}\" needs at least {n} rows"));
            }
            let prefix = format!("{array}.");
            let moved: Vec<(String, String)> = values
                .keys()
                .filter(|k| k.starts_with(&prefix))
                .cloned()
                .collect::<Vec<_>>()
                .into_iter()
                .filter_map(|k| {
                    let v = values.remove(&k)?;
                    let rest = &k[prefix.len()..];
                    let (seg, tail) = rest.split_once('.').map_or((rest, None), |(s, t)| (s, Some(t)));
                    let i: usize = match seg.parse() {
                        Ok(i) => i,
                        Err(_) => return Some((k, v)),
                    };
                    let new_i = match i.cmp(index) {
                        std::cmp::Ordering::Less => i,
                        std::cmp::Ordering::Equal => return None,
                        std::cmp::Ordering::Greater => i - 1,
                    };
                    let key = match tail {
                        Some(t) => format!("{prefix}{new_i}.{t}"),
                        None => format!("{prefix}{new_i}"),
                    };
                    Some((key, v))
                })
                .collect();
            values.extend(moved);
            values.insert(array.clone(), (n - 1).to_string());
        }
    }
    Ok(())
}

/// For a submission that pressed "add row" or "remove row": the values to
/// draw the form again with (the row added or removed). `None` for a real submit.
pub fn handle_row_action(tree: &FieldNode, fields: &[(String, String)]) -> Option<FormValues> {
    let action = row_action(fields)?;
    let mut values = values_from_fields(fields);
    values.remove(ADD_ROW);
    values.remove(REMOVE_ROW);
    // A refused action (past the bounds) just draws the form again unchanged.
    let _ = apply_row_action(tree, &mut values, &action);
    Some(values)
}

fn looks_like_email(s: &str) -> bool {
    match s.split_once('@') {
        Some((local, domain)) => {
            !local.is_empty()
                && !domain.is_empty()
                && !domain.contains('@')
                && !s.contains(char::is_whitespace)
        }
        None => false,
    }
}

fn looks_like_uri(s: &str) -> bool {
    match s.split_once(':') {
        Some((scheme, rest)) => {
            scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
                && !rest.is_empty()
                && !s.contains(char::is_whitespace)
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tollgate_wire::schema_subset::field_tree;

    #[test]
    fn engine_fields_become_form_paths() {
        assert_eq!(
            resume_field_to_path("resumeValue.comment").as_deref(),
            Some("comment")
        );
        assert_eq!(
            resume_field_to_path("resumeValue.contacts[0].email").as_deref(),
            Some("contacts.0.email")
        );
        assert_eq!(
            resume_field_to_path("resumeValue.answers.region").as_deref(),
            Some("answers.region")
        );
        assert_eq!(resume_field_to_path("resumeValue").as_deref(), Some(""));
        assert_eq!(resume_field_to_path("request.amount"), None);
        assert_eq!(resume_field_to_path("resumeValueX"), None);
    }

    fn pairs(values: &FormValues) -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = values.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        v.sort();
        v
    }

    fn f(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    /// schema + JSON → form values → (submitted as fields) → the same JSON.
    fn round_trip(schema: Value, value: Value) -> FormValues {
        let tree = field_tree(&schema).unwrap_or_else(|e| panic!("{schema}: {e}"));
        let values = json_to_values(&tree, &value);
        let back = form_to_json(&tree, &pairs(&values)).unwrap_or_else(|e| panic!("{value}: {e:?}"));
        assert_eq!(back, value, "values: {values:?}");
        values
    }

    fn schema(props: Value) -> Value {
        json!({"type": "object", "properties": props})
    }

    /// A few declared row counts of a list in a list would ask for a
    /// million rows; the form reads at most MAX_FORM_ROWS in all.
    #[test]
    fn nested_lists_read_at_most_the_form_row_budget() {
        let tree = field_tree(&schema(json!({
            "contacts": {"type": "array", "items": {"type": "object", "properties": {
                "phones": {"type": "array", "items": {"type": "string"}}
            }}}
        })))
        .unwrap();
        let mut fields = vec![("contacts".to_string(), "1000".to_string())];
        for i in 0..1000 {
            fields.push((format!("contacts.{i}.phones"), "1000".into()));
        }
        let errors = form_to_json(&tree, &fields).unwrap_err();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].path, "contacts.1.phones");
        assert!(errors[0].message.contains("at most 2000 rows"), "{errors:?}");
        // A full budget is read.
        let mut fields = vec![("contacts".to_string(), "10".to_string())];
        for i in 0..10 {
            fields.push((format!("contacts.{i}.phones"), "99".into()));
            fields.push((format!("contacts.{i}.phones.98"), "x".into()));
        }
        let v = form_to_json(&tree, &fields).unwrap();
        assert_eq!(v["contacts"].as_array().unwrap().len(), 10);
        assert_eq!(v["contacts"][9]["phones"], json!(["x"]));
    }

    #[test]
    fn round_trips_every_supported_keyword() {
        // Strings, each format, length, pattern, title and description.
        let v = round_trip(
            json!({
                "type": "object",
                "title": "Answer",
                "description": "What we need",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string", "title": "Name", "description": "Full name", "minLength": 2, "maxLength": 40, "pattern": "^[A-Za-z ]+$"},
                    "start": {"type": "string", "format": "date"},
                    "at": {"type": "string", "format": "date-time"},
                    "mail": {"type": "string", "format": "email"},
                    "site": {"type": "string", "format": "uri"},
                    "note": {"type": "string"}
                }
            }),
            json!({"name": "Ada Lovelace", "start": "2024-05-01", "at": "2024-05-01T10:30:00Z", "mail": "ada@example.com", "site": "https://example.com/a?b=c", "note": "two\nlines"}),
        );
        assert_eq!(v["at"], "2024-05-01T10:30");
        assert_eq!(v["name"], "Ada Lovelace");
        // Numbers and integers with bounds.
        let v = round_trip(
            schema(json!({
                "amount": {"type": "number", "minimum": 0, "maximum": 1000, "exclusiveMaximum": 1001},
                "ratio": {"type": "number", "exclusiveMinimum": 0},
                "count": {"type": "integer", "minimum": 1, "maximum": 10},
                "negative": {"type": "integer"}
            })),
            json!({"amount": 12.5, "ratio": 0.25, "count": 3, "negative": -7}),
        );
        assert_eq!(v["amount"], "12.5");
        assert_eq!(v["count"], "3");
        round_trip(
            schema(json!({"amount": {"type": "number"}})),
            json!({"amount": 12}),
        );
        // Booleans, both ways.
        round_trip(
            schema(json!({"ok": {"type": "boolean"}, "no": {"type": "boolean"}})),
            json!({"ok": true, "no": false}),
        );
        // Enums of strings, numbers and booleans; oneOf of consts with titles.
        let v = round_trip(
            schema(json!({
                "currency": {"type": "string", "enum": ["EUR", "USD"]},
                "level": {"enum": [1, 2.5, 3]},
                "flag": {"enum": [true, false]},
                "category": {"type": "string", "oneOf": [{"const": "software", "title": "Software"}, {"const": "services", "title": "Professional services"}]},
                "size": {"oneOf": [{"const": 1, "title": "Small"}, {"const": 2, "title": "Large"}]}
            })),
            json!({"currency": "USD", "level": 2.5, "flag": false, "category": "services", "size": 2}),
        );
        assert_eq!(v["level"], "2.5");
        assert_eq!(v["flag"], "false");
        assert_eq!(v["size"], "2");
        // Nested objects, arrays of scalars and of objects, nested arrays, JSON fields.
        let v = round_trip(
            schema(json!({
                "answers": {"type": "object", "required": ["vendor"], "properties": {
                    "vendor": {"type": "string"},
                    "address": {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "string"}}},
                    "contacts": {"type": "array", "minItems": 1, "maxItems": 5, "items": {"type": "object", "required": ["email"], "properties": {
                        "email": {"type": "string", "format": "email"},
                        "primary": {"type": "boolean"},
                        "phones": {"type": "array", "items": {"type": "string"}}
                    }}}
                }},
                "tags": {"type": "array", "items": {"type": "string"}},
                "scores": {"type": "array", "items": {"type": "integer"}},
                "picks": {"type": "array", "items": {"enum": ["a", "b"]}},
                "checks": {"type": "array", "items": {"type": "boolean"}},
                "extra": {},
                "feedback": {"type": "object"}
            })),
            json!({
                "answers": {"vendor": "Acme", "address": {"city": "Berlin"}, "contacts": [
                    {"email": "a@x.io", "primary": true, "phones": ["1", "2"]},
                    {"email": "b@x.io", "primary": false}
                ]},
                "tags": ["x", "y"],
                "scores": [3, 1],
                "picks": ["b"],
                "checks": [false, true],
                "extra": {"any": [1, "json"]},
                "feedback": {"notes": "free"}
            }),
        );
        assert_eq!(v["answers.contacts"], "2");
        assert_eq!(v["answers.contacts.0.email"], "a@x.io");
        assert_eq!(v["answers.contacts.0.phones.1"], "2");
        assert_eq!(v["tags.1"], "y");
        assert!(v["extra"].contains("\"any\""));
        // Required empty objects and arrays stay; optional ones are left out.
        let tree = field_tree(
            &json!({"type": "object", "required": ["must", "list"], "properties": {
                "must": {"type": "object", "properties": {"a": {"type": "string"}}},
                "may": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "boolean"}}},
                "list": {"type": "array", "items": {"type": "string"}},
                "maybeList": {"type": "array", "items": {"type": "string"}}
            }}),
        )
        .unwrap();
        assert_eq!(
            form_to_json(&tree, &f(&[("may.a", ""), ("list", "1"), ("list.0", "")])).unwrap(),
            json!({"must": {}, "list": []})
        );
        assert_eq!(
            form_to_json(&tree, &f(&[("may.b", "on")])).unwrap(),
            json!({"must": {}, "list": [], "may": {"b": true}})
        );
    }

    #[test]
    fn submissions_become_json() {
        let tree = field_tree(&json!({"type": "object", "required": ["comment"], "properties": {
            "comment": {"type": "string"},
            "optional": {"type": "string"},
            "ok": {"type": "boolean"},
            "yes": {"type": "boolean"},
            "n": {"type": "integer"},
            "x": {"type": "number"},
            "contacts": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}, "vip": {"type": "boolean"}}}},
            "when": {"type": "string", "format": "date-time"},
            "ro": {"type": "string", "readOnly": true, "default": "fixed"}
        }}))
        .unwrap();
        let out = form_to_json(
            &tree,
            &f(&[
                ("comment", "Looks fine"),
                ("optional", ""),
                ("ok", "on"),
                ("n", " 42 "),
                ("x", "1.5e2"),
                // Rows 0 and 3 survive; row 1 was removed client-side, row 2 is blank.
                ("contacts", "3"),
                ("contacts.0.name", "Ann"),
                ("contacts.2.name", ""),
                ("contacts.3.name", "Bo"),
                ("contacts.3.vip", "true"),
                ("when", "2024-02-29T23:59"),
                ("ro", "tampered"),
                ("_csrf", "abc"),
                ("action", "accept"),
            ]),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({
                "comment": "Looks fine", "ok": true, "yes": false, "n": 42, "x": 150.0,
                "contacts": [{"name": "Ann", "vip": false}, {"name": "Bo", "vip": true}],
                "when": "2024-02-29T23:59:00Z"
            })
        );
        // A required string left empty is left out: the server's "required" error lands beside it.
        assert_eq!(
            form_to_json(&tree, &f(&[("comment", "")])).unwrap(),
            json!({"ok": false, "yes": false})
        );
    }

    #[test]
    fn errors_name_the_field() {
        let tree = field_tree(&json!({"type": "object", "properties": {
            "n": {"type": "integer"},
            "x": {"type": "number"},
            "rows": {"type": "array", "items": {"type": "object", "properties": {"qty": {"type": "integer"}}}},
            "pick": {"enum": ["a", "b"]},
            "data": {},
            "day": {"type": "string", "format": "date"},
            "at": {"type": "string", "format": "date-time"},
            "mail": {"type": "string", "format": "email"},
            "site": {"type": "string", "format": "uri"},
            "ok": {"type": "boolean"}
        }}))
        .unwrap();
        let errs = form_to_json(
            &tree,
            &f(&[
                ("n", "1.5"),
                ("x", "abc"),
                ("rows.1.qty", "many"),
                ("pick", "c"),
                ("data", "{nope"),
                ("day", "2023-02-29"),
                ("at", "tomorrow"),
                ("mail", "nobody"),
                ("site", "example.com"),
                ("ok", "maybe"),
            ]),
        )
        .unwrap_err();
        let mut paths: Vec<&str> = errs.iter().map(|e| e.path.as_str()).collect();
        paths.sort();
        assert_eq!(
            paths,
            [
                "at",
                "data",
                "day",
                "mail",
                "n",
                "ok",
                "pick",
                "rows.1.qty",
                "site",
                "x"
            ]
        );
        let msg = |p: &str| errs.iter().find(|e| e.path == p).unwrap().message.clone();
        assert!(msg("n").contains("whole number"), "{}", msg("n"));
        assert!(msg("x").contains("\"abc\""));
        assert!(msg("data").contains("valid JSON"));
        // Infinity and NaN are not numbers.
        assert!(form_to_json(&tree, &f(&[("x", "inf")])).is_err());
        assert!(form_to_json(&tree, &f(&[("x", "NaN")])).is_err());
    }

    #[test]
    fn add_and_remove_rows() {
        let tree = field_tree(&json!({"type": "object", "properties": {
            "contacts": {"type": "array", "minItems": 1, "maxItems": 3, "items": {"type": "object", "properties": {
                "name": {"type": "string"}, "role": {"type": "string", "default": "buyer"}
            }}},
            "tags": {"type": "array", "items": {"type": "string"}}
        }}))
        .unwrap();
        // A fresh form draws minItems rows.
        let fresh = default_values(&tree);
        assert_eq!(row_count(&fresh, "contacts", Some(1)), 1);
        let submitted = f(&[
            ("contacts", "2"),
            ("contacts.0.name", "Ann"),
            ("contacts.1.name", "Bo"),
            ("_add", "contacts"),
        ]);
        let added = handle_row_action(&tree, &submitted).unwrap();
        assert_eq!(added["contacts"], "3");
        assert_eq!(added["contacts.2.role"], "buyer");
        assert!(!added.contains_key("_add"));
        assert_eq!(
            form_to_json(&tree, &pairs(&added)).unwrap(),
            json!({"contacts": [{"name": "Ann"}, {"name": "Bo"}, {"role": "buyer"}]})
        );
        // At maxItems nothing is added.
        let mut full = added.clone();
        assert!(apply_row_action(
            &tree,
            &mut full,
            &RowAction::Add {
                array: "contacts".into()
            }
        )
        .is_err());
        assert_eq!(full, added);
        // Removing row 0 moves the others up.
        let mut fields = pairs(&added);
        fields.push(("_remove".into(), "contacts.0".into()));
        assert_eq!(
            row_action(&fields),
            Some(RowAction::Remove {
                array: "contacts".into(),
                index: 0
            })
        );
        let removed = handle_row_action(&tree, &fields).unwrap();
        assert_eq!(removed["contacts"], "2");
        assert_eq!(removed["contacts.0.name"], "Bo");
        assert_eq!(removed["contacts.1.role"], "buyer");
        assert!(!removed.contains_key("contacts.2.role"));
        assert_eq!(
            form_to_json(&tree, &pairs(&removed)).unwrap(),
            json!({"contacts": [{"name": "Bo"}, {"role": "buyer"}]})
        );
        // Not below minItems.
        let mut one = json_to_values(&tree, &json!({"contacts": [{"name": "x"}]}));
        assert!(apply_row_action(
            &tree,
            &mut one,
            &RowAction::Remove {
                array: "contacts".into(),
                index: 0
            }
        )
        .is_err());
        // Scalar rows, and a row that does not exist.
        let mut tags = json_to_values(&tree, &json!({"tags": ["a", "b", "c"]}));
        apply_row_action(
            &tree,
            &mut tags,
            &RowAction::Remove {
                array: "tags".into(),
                index: 1,
            },
        )
        .unwrap();
        assert_eq!(
            form_to_json(&tree, &pairs(&tags)).unwrap()["tags"],
            json!(["a", "c"])
        );
        apply_row_action(&tree, &mut tags, &RowAction::Add { array: "tags".into() }).unwrap();
        assert_eq!(tags["tags"], "3");
        assert!(apply_row_action(
            &tree,
            &mut tags,
            &RowAction::Remove {
                array: "tags".into(),
                index: 7
            }
        )
        .is_err());
        assert!(apply_row_action(&tree, &mut tags, &RowAction::Add { array: "nope".into() }).is_err());
        assert_eq!(row_action(&f(&[("comment", "x")])), None);
        assert_eq!(handle_row_action(&tree, &f(&[("comment", "x")])), None);
    }

    #[test]
    fn defaults_and_read_only() {
        let tree = field_tree(&json!({"type": "object", "properties": {
            "answers": {"type": "object", "default": {"vendor": "From parent"}, "properties": {
                "vendor": {"type": "string", "default": "Own"},
                "spend": {"type": "integer", "default": 10},
                "gdpr": {"type": "boolean", "default": true}
            }},
            "ref": {"type": "string", "readOnly": true, "default": "R-1"},
            "at": {"type": "string", "format": "date-time", "default": "2024-01-01T00:00:00+01:00"}
        }}))
        .unwrap();
        assert_eq!(
            default_value(&tree).unwrap(),
            json!({"answers": {"vendor": "From parent", "spend": 10, "gdpr": true}, "ref": "R-1", "at": "2024-01-01T00:00:00+01:00"})
        );
        let values = default_values(&tree);
        assert_eq!(values["answers.vendor"], "From parent");
        assert_eq!(values["answers.gdpr"], "true");
        assert_eq!(values["ref"], "R-1");
        assert_eq!(values["at"], "2023-12-31T23:00");
        // Read-only fields are drawn but never read back.
        assert_eq!(
            form_to_json(&tree, &pairs(&values)).unwrap(),
            json!({"answers": {"vendor": "From parent", "spend": 10, "gdpr": true}, "at": "2023-12-31T23:00:00Z"})
        );
    }

    #[test]
    fn engine_errors_land_beside_their_field() {
        let tree = field_tree(&json!({"type": "object", "properties": {
            "answers": {"type": "object", "properties": {
                "contacts": {"type": "array", "items": {"type": "object", "properties": {"email": {"type": "string"}}}},
                "blob": {}
            }}
        }}))
        .unwrap();
        assert_eq!(
            pointer_to_path("/answers/contacts/0/email"),
            "answers.contacts.0.email"
        );
        assert_eq!(pointer_to_path("/a~1b/c~0d"), "a/b.c~d");
        assert_eq!(pointer_to_path(""), "");
        let map = errors_for_form(
            &tree,
            [
                ("answers.contacts.0.email".to_string(), "bad email".to_string()),
                ("answers.blob.deep.x".into(), "inside JSON".into()),
                ("answers.contacts".into(), "too few".into()),
                ("unknown".into(), "extra property".into()),
                ("".into(), "root".into()),
            ],
        );
        assert_eq!(map["answers.contacts.0.email"], "bad email");
        assert_eq!(map["answers.blob"], "inside JSON");
        assert_eq!(map["answers.contacts"], "too few");
        assert_eq!(map[""], "extra property root");
        assert!(locate(&tree, "answers.contacts.x").is_none());
        assert_eq!(
            locate(&tree, "answers.contacts.3.email").unwrap().path,
            "answers.contacts.*.email"
        );
    }
}
