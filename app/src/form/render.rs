//! Leptos components: [`SchemaForm`] draws a [`FieldNode`] as plain HTML
//! inputs (working without JavaScript inside the caller's
//! `<form method="post">`), [`SchemaView`] draws a payload read-only.

use super::dates::datetime_to_input;
use super::values::{join, option_value, row_count, row_of, FormValues, ADD_ROW, MAX_FORM_ROWS, REMOVE_ROW};
use leptos::prelude::*;
use serde_json::Value;
use std::cell::Cell;
use std::collections::HashMap;
use tollgate_wire::schema_subset::{field_tree, humanize, FieldKind, FieldNode, TextFormat};

const INPUT_CLASS: &str = "block w-full rounded-md border border-slate-300 bg-white px-3 py-2 text-slate-900 shadow-sm placeholder:text-slate-400 focus:border-indigo-500 focus:outline-none focus:ring-2 focus:ring-indigo-500 read-only:bg-slate-100 disabled:bg-slate-100 aria-[invalid=true]:border-red-600 aria-[invalid=true]:ring-red-600";
const SELECT_CLASS: &str = "block w-full rounded-md border border-slate-300 bg-white px-3 py-2 text-slate-900 shadow-sm focus:border-indigo-500 focus:outline-none focus:ring-2 focus:ring-indigo-500 disabled:bg-slate-100 aria-[invalid=true]:border-red-600 aria-[invalid=true]:ring-red-600";
const LABEL_CLASS: &str = "block text-sm font-medium text-slate-800";
const DESC_CLASS: &str = "text-sm text-slate-500";
const ERROR_CLASS: &str = "text-sm font-medium text-red-700";
const FIELDSET_CLASS: &str = "space-y-4 rounded-md border border-slate-200 p-4";
const LEGEND_CLASS: &str = "px-1 text-sm font-semibold text-slate-800";
const ROW_BUTTON_CLASS: &str = "rounded-md border border-slate-300 bg-white px-3 py-1.5 text-sm font-medium text-slate-700 hover:bg-slate-50 focus:outline-none focus:ring-2 focus:ring-indigo-500";

/// The `id` of the input for the field at `path` (`answers.contacts.0.email`
/// → `<prefix>-answers-contacts-0-email`); characters other than ASCII
/// letters and digits are escaped so ids stay unique and contain no spaces.
pub fn field_id(prefix: &str, path: &str) -> String {
    let mut id = prefix.to_string();
    if path.is_empty() {
        return id;
    }
    id.push('-');
    for c in path.chars() {
        match c {
            c if c.is_ascii_alphanumeric() => id.push(c),
            '.' => id.push('-'),
            c => id.push_str(&format!("_{:x}_", c as u32)),
        }
    }
    id
}

struct Ctx<'a> {
    values: &'a FormValues,
    errors: &'a HashMap<String, String>,
    prefix: &'a str,
    /// Rows still to draw over all lists (see [`MAX_FORM_ROWS`]).
    rows_left: Cell<usize>,
}

/// Draws the fields of `tree` (no `<form>` element and no submit buttons:
/// the caller supplies those). Input names are the dotted paths
/// [`super::form_to_json`] reads back; `values` pre-fills them (see
/// [`super::default_values`], [`super::json_to_values`],
/// [`super::values_from_fields`]); `errors` (path → message, e.g. from
/// [`super::errors_for_form`]) are shown beside their fields, the top-level
/// one (path `""`) above all fields. Arrays draw "add row" (`name="_add"`) and
/// "remove row" (`name="_remove"`) submit buttons; see [`super::handle_row_action`].
/// `id_prefix` (default `field`) keeps ids unique when a page has two forms.
#[component]
pub fn SchemaForm(
    tree: FieldNode,
    #[prop(optional)] values: FormValues,
    #[prop(optional)] errors: HashMap<String, String>,
    #[prop(optional, into)] id_prefix: Option<String>,
) -> impl IntoView {
    let prefix = id_prefix.unwrap_or_else(|| "field".to_string());
    let ctx = Ctx {
        values: &values,
        errors: &errors,
        prefix: &prefix,
        rows_left: Cell::new(MAX_FORM_ROWS),
    };
    let top_error = errors.get("").cloned().map(|e| {
        view! {
            <p id=format!("{prefix}--error") role="alert" class=ERROR_CLASS>
                {e}
            </p>
        }
    });
    let body: Vec<AnyView> = match &tree.kind {
        FieldKind::Object { fields } => fields
            .iter()
            .map(|f| field(&ctx, f, &f.name, tree.read_only))
            .collect(),
        _ => vec![field(&ctx, &tree, "", false)],
    };
    view! { <div class="space-y-5">{top_error}{body}</div> }
}

/// The ids and texts around one input: description, hint and error.
struct Around {
    id: String,
    desc: Option<(String, String)>,
    error: Option<(String, String)>,
}

impl Around {
    fn new(ctx: &Ctx, node: &FieldNode, path: &str) -> Self {
        let id = field_id(ctx.prefix, path);
        let hint = match &node.kind {
            FieldKind::Text {
                format: Some(TextFormat::DateTime),
                ..
            } => Some("Date and time in UTC."),
            FieldKind::Json => Some("JSON."),
            _ => None,
        };
        let desc = match (&node.description, hint) {
            (Some(d), Some(h)) => Some(format!("{d} {h}")),
            (Some(d), None) => Some(d.clone()),
            (None, Some(h)) => Some(h.to_string()),
            (None, None) => None,
        };
        Around {
            desc: desc.map(|d| (format!("{id}-desc"), d)),
            error: ctx.errors.get(path).map(|e| (format!("{id}-error"), e.clone())),
            id,
        }
    }

    fn described_by(&self) -> Option<String> {
        let ids: Vec<&str> = [&self.desc, &self.error]
            .into_iter()
            .flatten()
            .map(|(id, _)| id.as_str())
            .collect();
        (!ids.is_empty()).then(|| ids.join(" "))
    }

    fn invalid(&self) -> Option<&'static str> {
        self.error.as_ref().map(|_| "true")
    }

    fn desc_view(&self) -> Option<AnyView> {
        self.desc.clone().map(|(id, d)| {
            view! {
                <p id=id class=DESC_CLASS>
                    {d}
                </p>
            }
            .into_any()
        })
    }

    fn error_view(&self) -> Option<AnyView> {
        self.error.clone().map(|(id, e)| {
            view! {
                <p id=id class=ERROR_CLASS>
                    {e}
                </p>
            }
            .into_any()
        })
    }
}

fn label(around: &Around, node: &FieldNode, show_required: bool) -> AnyView {
    let mark = (show_required && node.required && !node.read_only).then(|| {
        view! {
            <span class="text-red-700" aria-hidden="true">
                " *"
            </span>
        }
    });
    view! {
        <label for=around.id.clone() class=LABEL_CLASS>
            {node.title.clone()}
            {mark}
        </label>
    }
    .into_any()
}

fn fmt_num(x: f64) -> String {
    format!("{x}")
}

fn field(ctx: &Ctx, node: &FieldNode, path: &str, parent_read_only: bool) -> AnyView {
    let read_only = node.read_only || parent_read_only;
    let around = Around::new(ctx, node, path);
    let value = ctx.values.get(path).cloned().unwrap_or_default();
    let required = node.required && !read_only;
    match &node.kind {
        FieldKind::Object { fields } => {
            let children: Vec<AnyView> = fields
                .iter()
                .map(|f| field(ctx, f, &join(path, &f.name), read_only))
                .collect();
            view! {
                <fieldset
                    id=around.id.clone()
                    class=FIELDSET_CLASS
                    aria-describedby=around.described_by()
                >
                    <legend class=LEGEND_CLASS>{node.title.clone()}</legend>
                    {around.desc_view()}
                    {around.error_view()}
                    {children}
                </fieldset>
            }
            .into_any()
        }
        FieldKind::Array { item, min, max } => array(ctx, node, item, *min, *max, path, read_only, &around),
        FieldKind::Boolean => {
            let checked = matches!(value.as_str(), "true" | "on");
            let keep = (read_only && checked).then(|| {
                view! { <input type="hidden" name=path.to_string() value="true" /> }
            });
            view! {
                <div class="space-y-1">
                    <div class="flex items-start gap-2">
                        <input
                            type="checkbox"
                            id=around.id.clone()
                            name=(!read_only).then(|| path.to_string())
                            value="true"
                            checked=checked
                            disabled=read_only
                            aria-describedby=around.described_by()
                            aria-invalid=around.invalid()
                            class="mt-1 h-4 w-4 rounded border-slate-300 text-indigo-600 focus:ring-2 focus:ring-indigo-500"
                        />
                        {label(&around, node, false)}
                    </div>
                    {keep}
                    {around.desc_view()}
                    {around.error_view()}
                </div>
            }
            .into_any()
        }
        FieldKind::Select { options } => {
            let known = options.iter().any(|(v, _)| option_value(v) == value);
            let mut opts: Vec<AnyView> = vec![view! {
                <option value="" selected=value.is_empty()>
                    "Choose…"
                </option>
            }
            .into_any()];
            // A value that is not an option (shown again after an error) stays visible.
            if !value.is_empty() && !known {
                opts.push(
                    view! {
                        <option value=value.clone() selected=true>
                            {value.clone()}
                        </option>
                    }
                    .into_any(),
                );
            }
            for (v, text) in options {
                let enc = option_value(v);
                let selected = enc == value;
                opts.push(
                    view! {
                        <option value=enc selected=selected>
                            {text.clone()}
                        </option>
                    }
                    .into_any(),
                );
            }
            let keep = (read_only && !value.is_empty())
                .then(|| view! { <input type="hidden" name=path.to_string() value=value.clone() /> });
            view! {
                <div class="space-y-1">
                    {label(&around, node, true)}
                    <select
                        id=around.id.clone()
                        name=(!read_only).then(|| path.to_string())
                        required=required
                        disabled=read_only
                        aria-describedby=around.described_by()
                        aria-invalid=around.invalid()
                        class=SELECT_CLASS
                    >
                        {opts}
                    </select>
                    {keep}
                    {around.desc_view()}
                    {around.error_view()}
                </div>
            }
            .into_any()
        }
        FieldKind::Json => view! {
            <div class="space-y-1">
                {label(&around, node, true)}
                <textarea
                    id=around.id.clone()
                    name=path.to_string()
                    rows="6"
                    spellcheck="false"
                    required=required
                    readonly=read_only
                    aria-describedby=around.described_by()
                    aria-invalid=around.invalid()
                    class=format!("{INPUT_CLASS} font-mono text-sm")
                >
                    {value}
                </textarea>
                {around.desc_view()}
                {around.error_view()}
            </div>
        }
        .into_any(),
        FieldKind::Text {
            format,
            min_length,
            max_length,
            pattern,
        } => {
            let ty = match format {
                None => "text",
                Some(TextFormat::Date) => "date",
                Some(TextFormat::DateTime) => "datetime-local",
                Some(TextFormat::Email) => "email",
                Some(TextFormat::Uri) => "url",
            };
            let autocomplete = matches!(format, Some(TextFormat::Email)).then_some("email");
            let step = matches!(format, Some(TextFormat::DateTime)).then_some("any");
            view! {
                <div class="space-y-1">
                    {label(&around, node, true)}
                    <input
                        type=ty
                        id=around.id.clone()
                        name=path.to_string()
                        value=value
                        required=required
                        readonly=read_only
                        minlength=min_length.map(|n| n.to_string())
                        maxlength=max_length.map(|n| n.to_string())
                        pattern=pattern.clone()
                        step=step
                        autocomplete=autocomplete
                        aria-describedby=around.described_by()
                        aria-invalid=around.invalid()
                        class=INPUT_CLASS
                    />
                    {around.desc_view()}
                    {around.error_view()}
                </div>
            }
            .into_any()
        }
        FieldKind::Number {
            integer,
            min,
            max,
            exclusive_min,
            exclusive_max,
        } => {
            // HTML has no exclusive bounds; for integers they become inclusive ones.
            let (min, max) = if *integer {
                (
                    [*min, exclusive_min.map(|x| x.floor() + 1.0)]
                        .into_iter()
                        .flatten()
                        .reduce(f64::max),
                    [*max, exclusive_max.map(|x| x.ceil() - 1.0)]
                        .into_iter()
                        .flatten()
                        .reduce(f64::min),
                )
            } else {
                (*min, *max)
            };
            view! {
                <div class="space-y-1">
                    {label(&around, node, true)}
                    <input
                        type="number"
                        id=around.id.clone()
                        name=path.to_string()
                        value=value
                        required=required
                        readonly=read_only
                        min=min.map(fmt_num)
                        max=max.map(fmt_num)
                        step=if *integer { "1" } else { "any" }
                        inputmode=if *integer { "numeric" } else { "decimal" }
                        aria-describedby=around.described_by()
                        aria-invalid=around.invalid()
                        class=INPUT_CLASS
                    />
                    {around.desc_view()}
                    {around.error_view()}
                </div>
            }
            .into_any()
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn array(
    ctx: &Ctx,
    node: &FieldNode,
    item: &FieldNode,
    min: Option<u64>,
    max: Option<u64>,
    path: &str,
    read_only: bool,
    around: &Around,
) -> AnyView {
    let all = row_count(ctx.values, path, min);
    let n = all.min(ctx.rows_left.get());
    ctx.rows_left.set(ctx.rows_left.get() - n);
    // Rows past the form's budget are not drawn, but nothing is lost: their
    // values ride along hidden, the count stays, and reading the form
    // refuses it until rows are removed.
    let (over, carried) = if n < all {
        let prefix = format!("{path}.");
        let mut carried: Vec<(&String, &String)> = ctx
            .values
            .iter()
            .filter(|(k, _)| row_of(k, &prefix).is_some_and(|row| row >= n))
            .collect();
        carried.sort();
        let hidden = carried
            .into_iter()
            .map(|(k, v)| view! { <input type="hidden" name=k.clone() value=v.clone() /> })
            .collect_view();
        let note = view! {
            <p role="alert" class=ERROR_CLASS>
                {format!(
                    "Only the first {n} of {all} rows are shown: this form holds at most {MAX_FORM_ROWS} rows in all its lists. Remove rows to submit it."
                )}
            </p>
        };
        (Some(note), Some(hidden))
    } else {
        (None, None)
    };
    let can_remove = !read_only && min.is_none_or(|m| n as u64 > m);
    let can_add = !read_only && n == all && max.is_none_or(|m| (n as u64) < m);
    let rows: Vec<AnyView> = (0..n)
        .map(|i| {
            let row_path = join(path, &i.to_string());
            let mut row = item.clone();
            row.title = format!("{} {}", item.title, i + 1);
            let inner = field(ctx, &row, &row_path, read_only);
            let remove = can_remove.then(|| {
                view! {
                    <button
                        type="submit"
                        name=REMOVE_ROW
                        value=row_path.clone()
                        formnovalidate=true
                        aria-label=format!("Remove {}", row.title)
                        class=ROW_BUTTON_CLASS
                    >
                        "Remove"
                    </button>
                }
            });
            view! {
                <div class="flex items-start gap-3" data-row=i.to_string()>
                    <div class="min-w-0 flex-1">{inner}</div>
                    <div class="pt-6">{remove}</div>
                </div>
            }
            .into_any()
        })
        .collect();
    let empty = (n == 0).then(|| view! { <p class=DESC_CLASS>"No rows yet."</p> });
    let add = can_add.then(|| {
        view! {
            <button
                type="submit"
                name=ADD_ROW
                value=path.to_string()
                formnovalidate=true
                aria-label=format!("Add row to {}", node.title)
                class=ROW_BUTTON_CLASS
            >
                "Add row"
            </button>
        }
    });
    view! {
        <fieldset
            id=around.id.clone()
            class=FIELDSET_CLASS
            aria-describedby=around.described_by()
        >
            <legend class=LEGEND_CLASS>
                {node.title.clone()}
                {(node.required && !read_only)
                    .then(|| {
                        view! {
                            <span class="text-red-700" aria-hidden="true">
                                " *"
                            </span>
                        }
                    })}
            </legend>
            {around.desc_view()}
            {around.error_view()}
            <input type="hidden" name=path.to_string() value=all.to_string() />
            {over}
            {empty}
            {rows}
            {carried}
            {add}
        </fieldset>
    }
    .into_any()
}

/// Draws a payload read-only: a definition list using the schema's titles,
/// descriptions, formats and option labels; nested objects and arrays are
/// nested lists; members the schema does not describe are shown too. Without
/// a schema the console can draw, the value is shown as pretty JSON.
#[component]
pub fn SchemaView(value: Value, #[prop(optional)] schema: Option<Value>) -> impl IntoView {
    let tree = schema.as_ref().and_then(|s| field_tree(s).ok());
    match (&tree, &value) {
        (Some(t), Value::Object(_)) => show(Some(t), &value),
        _ => pretty(&value),
    }
}

fn pretty(value: &Value) -> AnyView {
    let text = serde_json::to_string_pretty(value).unwrap_or_default();
    view! {
        <pre class="overflow-x-auto rounded-md bg-slate-100 p-3 font-mono text-sm text-slate-800">
            {text}
        </pre>
    }
    .into_any()
}

fn show(node: Option<&FieldNode>, value: &Value) -> AnyView {
    let kind = node.map(|n| &n.kind);
    match (kind, value) {
        (Some(FieldKind::Object { fields }), Value::Object(m)) => {
            let mut rows: Vec<AnyView> = Vec::new();
            for f in fields {
                if let Some(v) = m.get(&f.name) {
                    rows.push(dl_row(f.title.clone(), f.description.clone(), show(Some(f), v)));
                }
            }
            for (k, v) in m {
                if !fields.iter().any(|f| &f.name == k) {
                    rows.push(dl_row(humanize(k), None, show(None, v)));
                }
            }
            if rows.is_empty() {
                return view! { <p class="text-sm text-slate-500">"Nothing."</p> }.into_any();
            }
            view! { <dl class="divide-y divide-slate-100">{rows}</dl> }.into_any()
        }
        (Some(FieldKind::Array { item, .. }), Value::Array(items)) => {
            if items.is_empty() {
                return view! { <p class="text-sm text-slate-500">"None."</p> }.into_any();
            }
            let lis: Vec<AnyView> = items
                .iter()
                .map(|v| view! { <li class="pl-1">{show(Some(item), v)}</li> }.into_any())
                .collect();
            view! { <ol class="list-decimal space-y-2 pl-5">{lis}</ol> }.into_any()
        }
        (Some(FieldKind::Select { options }), v) => {
            let text = options
                .iter()
                .find(|(o, _)| o == v)
                .map(|(_, label)| label.clone())
                .unwrap_or_else(|| scalar_text(v));
            view! { <span>{text}</span> }.into_any()
        }
        (Some(FieldKind::Boolean), Value::Bool(b)) => {
            view! { <span>{if *b { "Yes" } else { "No" }}</span> }.into_any()
        }
        (Some(FieldKind::Text { format, .. }), Value::String(s)) => text(*format, s),
        (_, v @ (Value::Object(_) | Value::Array(_))) => pretty(v),
        (_, v) => view! { <span>{scalar_text(v)}</span> }.into_any(),
    }
}

fn text(format: Option<TextFormat>, s: &str) -> AnyView {
    let s = s.to_string();
    match format {
        Some(TextFormat::Email) if !s.contains(char::is_whitespace) => {
            let href = format!("mailto:{s}");
            view! {
                <a href=href class="text-indigo-700 underline">
                    {s}
                </a>
            }
            .into_any()
        }
        // Only web addresses become links; anything else (javascript:…) stays text.
        Some(TextFormat::Uri) if s.starts_with("https://") || s.starts_with("http://") => {
            let href = s.clone();
            view! {
                <a href=href rel="noopener noreferrer nofollow" class="text-indigo-700 underline break-all">
                    {s}
                </a>
            }
            .into_any()
        }
        Some(TextFormat::DateTime) => {
            let shown =
                datetime_to_input(&s).map_or_else(|| s.clone(), |t| format!("{} UTC", t.replace('T', " ")));
            view! { <time datetime=s>{shown}</time> }.into_any()
        }
        Some(TextFormat::Date) => {
            let shown = s.clone();
            view! { <time datetime=s>{shown}</time> }.into_any()
        }
        _ => view! { <span class="whitespace-pre-wrap">{s}</span> }.into_any(),
    }
}

fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "—".to_string(),
        other => other.to_string(),
    }
}

fn dl_row(title: String, description: Option<String>, value: AnyView) -> AnyView {
    let desc = description.map(|d| view! { <p class="text-xs font-normal text-slate-500">{d}</p> });
    view! {
        <div class="py-2 sm:grid sm:grid-cols-3 sm:gap-4">
            <dt class="text-sm font-medium text-slate-600">{title}{desc}</dt>
            <dd class="mt-1 text-sm text-slate-900 sm:col-span-2 sm:mt-0">{value}</dd>
        </div>
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_safe() {
        assert_eq!(
            field_id("f", "answers.contacts.0.email"),
            "f-answers-contacts-0-email"
        );
        assert_eq!(field_id("f", ""), "f");
        assert_ne!(field_id("f", "a-b"), field_id("f", "a.b"));
        assert_ne!(field_id("f", "a b"), field_id("f", "a_b"));
        assert!(!field_id("f", "a b").contains(' '));
    }
}

/// Rendering to an HTML string needs the server renderer.
#[cfg(all(test, feature = "ssr"))]
mod render_tests {
    use super::super::values::{default_values, json_to_values};
    use super::*;
    use serde_json::json;
    use tollgate_wire::schema_subset::field_tree;

    fn vendor_tree() -> FieldNode {
        let raw: Value =
            serde_json::from_str(include_str!("../../../demo/workflows/vendor-onboarding.json")).unwrap();
        field_tree(&raw["nodes"][0]["config"]["resumeSchema"]).unwrap()
    }

    fn render(tree: FieldNode, values: FormValues, errors: HashMap<String, String>) -> String {
        view! { <SchemaForm tree values errors id_prefix="f" /> }.to_html()
    }

    #[test]
    fn draws_labelled_inputs_with_names_ids_and_constraints() {
        let tree = vendor_tree();
        let mut values = default_values(&tree);
        values.insert("answers.contacts".into(), "1".into());
        let html = render(tree, values, HashMap::new());
        for needle in [
            r#"<label for="f-answers-vendorName""#,
            r#"id="f-answers-vendorName""#,
            r#"name="answers.vendorName""#,
            r#"minlength="2""#,
            r#"type="date""#,
            r#"name="answers.contractStart""#,
            r#"type="url""#,
            r#"type="number""#,
            r#"step="1""#,
            r#"min="0""#,
            r#"type="checkbox""#,
            r#"name="answers.dataProcessing""#,
            r#"<select"#,
            r#"<option value="services""#,
            ">Professional services</option>",
            r#"<legend class="px-1 text-sm font-semibold text-slate-800">Contacts"#,
            r#"<input type="hidden" name="answers.contacts" value="1""#,
            r#"name="answers.contacts.0.email""#,
            r#"type="email""#,
            r#"<label for="f-answers-contacts-0-email""#,
            r#"name="_add" value="answers.contacts""#,
            r#"name="_remove" value="answers.contacts.0""#,
            "formnovalidate",
            "Contacts 1",
        ] {
            assert!(html.contains(needle), "missing {needle} in\n{html}");
        }
        // Required fields carry `required`; optional ones do not.
        let vendor_input = html.split(r#"id="f-answers-vendorName""#).nth(1).unwrap();
        assert!(vendor_input.split('>').next().unwrap().contains("required"));
        let website_input = html.split(r#"id="f-answers-website""#).nth(1).unwrap();
        assert!(!website_input.split('>').next().unwrap().contains("required"));
        // Every id is unique and every label points at one.
        let ids: Vec<&str> = html
            .split(" id=\"")
            .skip(1)
            .map(|s| s.split('"').next().unwrap())
            .collect();
        let mut unique = ids.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(ids.len(), unique.len(), "{ids:?}");
        for target in html
            .split("<label for=\"")
            .skip(1)
            .map(|s| s.split('"').next().unwrap())
        {
            assert!(ids.contains(&target), "label for {target} has no input");
        }
    }

    /// Declared row counts of a list in a list would multiply; the whole
    /// form draws at most MAX_FORM_ROWS rows however many are declared.
    #[test]
    fn nested_lists_draw_at_most_the_form_row_budget() {
        let tree = field_tree(&json!({"type": "object", "properties": {
            "contacts": {"type": "array", "items": {"type": "object", "properties": {
                "phones": {"type": "array", "items": {"type": "string"}}
            }}}
        }}))
        .unwrap();
        let mut values = FormValues::new();
        values.insert("contacts".into(), "1000".into());
        for i in 0..1000 {
            values.insert(format!("contacts.{i}.phones"), "1000".into());
        }
        values.insert("contacts.999.phones.3".into(), "kept".into());
        let html = render(tree, values, HashMap::new());
        let rows = html.matches("data-row=").count();
        assert_eq!(rows, MAX_FORM_ROWS, "rows drawn");
        // What is not drawn is carried, and the person is told.
        assert!(
            html.contains(r#"name="contacts.999.phones" value="1000""#),
            "counts kept"
        );
        assert!(
            html.contains(r#"name="contacts.999.phones.3" value="kept""#),
            "values carried"
        );
        assert!(
            html.contains("Only the first 0 of 1000 rows are shown"),
            "{}",
            &html[..400]
        );
    }

    #[test]
    fn errors_sit_beside_their_field() {
        let tree = vendor_tree();
        let values = json_to_values(&tree, &json!({"answers": {"vendorName": "A", "annualSpend": 5}}));
        let errors: HashMap<String, String> = [
            (
                "answers.vendorName".to_string(),
                "Too short: at least 2 characters.".to_string(),
            ),
            ("".to_string(), "Some answers need attention.".to_string()),
        ]
        .into();
        let html = render(tree, values, errors);
        assert!(html.contains(r#"<p id="f--error" role="alert""#), "{html}");
        assert!(html.contains("Some answers need attention."));
        let input = html.split(r#"id="f-answers-vendorName""#).nth(1).unwrap();
        let input = input.split('>').next().unwrap();
        assert!(input.contains(r#"aria-invalid="true""#), "{input}");
        assert!(
            input.contains(r#"aria-describedby="f-answers-vendorName-error""#),
            "{input}"
        );
        assert!(input.contains(r#"value="A""#), "{input}");
        assert!(html.contains(r#"<p id="f-answers-vendorName-error" class="text-sm font-medium text-red-700">Too short: at least 2 characters.</p>"#));
        // Only the field with the error is marked invalid.
        assert_eq!(html.matches("aria-invalid").count(), 1);
        let spend = html.split(r#"id="f-answers-annualSpend""#).nth(1).unwrap();
        assert!(spend.split('>').next().unwrap().contains(r#"value="5""#));

        // Errors on a list and on a field inside a row; a description is linked too.
        let mut tree = vendor_tree();
        if let FieldKind::Object { fields } = &mut tree.kind {
            fields[0].description = Some("As on the contract".into());
        }
        let values = json_to_values(
            &tree,
            &json!({"answers": {"contacts": [{"name": "Ann", "email": "x"}]}}),
        );
        let errors = super::super::errors_for_form(
            &tree,
            [
                (
                    "answers.contacts".to_string(),
                    "Add at least two contacts.".to_string(),
                ),
                (
                    super::super::pointer_to_path("/answers/contacts/0/email"),
                    "Not an email address.".to_string(),
                ),
            ],
        );
        let html = render(tree, values, errors);
        let list = html.split(r#"<fieldset id="f-answers-contacts""#).nth(1).unwrap();
        assert!(list
            .split('>')
            .next()
            .unwrap()
            .contains(r#"aria-describedby="f-answers-contacts-error""#));
        assert!(list.contains(r#"<p id="f-answers-contacts-error" class="text-sm font-medium text-red-700">Add at least two contacts.</p>"#));
        let email = html.split(r#"id="f-answers-contacts-0-email""#).nth(1).unwrap();
        let email = email.split('>').next().unwrap();
        assert!(email.contains(r#"aria-invalid="true""#), "{email}");
        assert!(email.contains(r#"aria-describedby="f-answers-contacts-0-email-error""#));
        assert!(html.contains("Not an email address."));
        assert!(html.contains(r#"aria-describedby="f-answers-desc""#));
        assert!(html.contains("As on the contract"));
    }

    #[test]
    fn empty_lists_offer_a_row() {
        let tree = field_tree(&json!({"type": "object", "properties": {
            "tags": {"type": "array", "title": "Tags", "items": {"type": "string"}}
        }}))
        .unwrap();
        let html = render(tree, FormValues::new(), HashMap::new());
        assert!(html.contains("No rows yet."));
        assert!(html.contains(r#"<input type="hidden" name="tags" value="0">"#));
        assert!(
            html.contains(r#"name="_add" value="tags" formnovalidate aria-label="Add row to Tags""#),
            "{html}"
        );
        assert!(!html.contains("_remove"));
    }

    #[test]
    fn draws_every_kind() {
        let tree = field_tree(
            &json!({"type": "object", "required": ["when", "level"], "properties": {
                "when": {"type": "string", "format": "date-time", "description": "When it happens"},
                "level": {"type": "integer", "enum": [1, 2]},
                "ratio": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
                "count": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10},
                "code": {"type": "string", "pattern": "^[A-Z]{3}$", "maxLength": 3},
                "data": {},
                "ref": {"type": "string", "readOnly": true},
                "locked": {"type": "boolean", "readOnly": true},
                "tags": {"type": "array", "maxItems": 2, "items": {"type": "string"}}
            }}),
        )
        .unwrap();
        let values = json_to_values(
            &tree,
            &json!({"when": "2024-05-01T10:00:00Z", "level": 2, "data": {"a": 1}, "ref": "R-1", "locked": true, "tags": ["x", "y"]}),
        );
        let html = render(tree, values, HashMap::new());
        for needle in [
            r#"type="datetime-local""#,
            r#"value="2024-05-01T10:00""#,
            r#"aria-describedby="f-when-desc""#,
            "When it happens Date and time in UTC.",
            r#"<option value="2" selected>"#,
            r#"step="any""#,
            r#"max="1""#,
            r#"min="1""#,
            r#"max="9""#,
            r#"pattern="^[A-Z]{3}$""#,
            r#"maxlength="3""#,
            "<textarea",
            r#"name="data""#,
            "\"a\": 1",
            r#"readonly"#,
            r#"value="R-1""#,
            r#"<input type="hidden" name="locked" value="true""#,
            r#"<input type="hidden" name="tags" value="2""#,
            r#"name="tags.1""#,
        ] {
            assert!(html.contains(needle), "missing {needle} in\n{html}");
        }
        // At maxItems there is no "add row" button.
        assert!(!html.contains(r#"name="_add""#));
        // The read-only checkbox is disabled and has no name of its own.
        let locked = html.split(r#"id="f-locked""#).nth(1).unwrap();
        let locked = locked.split('>').next().unwrap();
        assert!(locked.contains("disabled") && locked.contains("checked") && !locked.contains("name="));
    }

    #[test]
    fn read_only_view_uses_the_schema() {
        let schema = json!({"type": "object", "properties": {
            "amount": {"type": "number", "title": "Amount", "description": "Gross"},
            "currency": {"oneOf": [{"const": "EUR", "title": "Euro"}]},
            "submittedBy": {"type": "string", "format": "email"},
            "site": {"type": "string", "format": "uri"},
            "evil": {"type": "string", "format": "uri"},
            "at": {"type": "string", "format": "date-time"},
            "paid": {"type": "boolean"},
            "lines": {"type": "array", "items": {"type": "object", "properties": {"qty": {"type": "integer", "title": "Quantity"}}}},
            "address": {"type": "object", "properties": {"city": {"type": "string"}}}
        }});
        let value = json!({
            "amount": 12.5, "currency": "EUR", "submittedBy": "a@b.c", "site": "https://x.io", "evil": "javascript:alert(1)",
            "at": "2024-05-01T10:00:00+02:00", "paid": false, "lines": [{"qty": 2}], "address": {"city": "Oslo"},
            "extra": {"k": [1]}
        });
        let html = view! { <SchemaView schema=schema value=value /> }.to_html();
        for needle in [
            "<dl",
            ">Amount<",
            "Gross",
            "12.5",
            ">Euro<",
            r#"href="mailto:a@b.c""#,
            r#"href="https://x.io""#,
            "2024-05-01 08:00 UTC",
            ">No<",
            ">Quantity<",
            "<ol",
            ">City<",
            "Oslo",
            ">Extra<",
            "<pre",
        ] {
            assert!(html.contains(needle), "missing {needle} in\n{html}");
        }
        assert!(!html.contains(r#"href="javascript"#));
        let html = view! { <SchemaView value=json!({"a": [1, 2]}) /> }.to_html();
        assert!(html.starts_with("<pre"), "{html}");
        assert!(html.contains("\"a\": ["), "{html}");
    }
}
