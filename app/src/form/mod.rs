//! The JSON-Schema form renderer (DESIGN §5): a pure function from a schema
//! to a field tree ([`field_tree`]), the inverse from submitted form fields
//! back to JSON ([`form_to_json`]), pre-filling ([`json_to_values`],
//! [`default_values`]) and the Leptos components that draw a form
//! ([`SchemaForm`]) or a payload ([`SchemaView`]).
//!
//! The subset drawn is the one `tollgate_wire::schema_subset::check` accepts
//! at registration (object, nested object, string with formats date,
//! date-time, email and uri, number, integer, boolean, enum, `oneOf` of
//! consts, arrays of scalars and of objects, required, bounds, pattern,
//! default, title, description, readOnly, and `{}` as a JSON text field); the
//! field tree is built by that same crate, so the two cannot disagree.
//!
//! Forms work without JavaScript: the caller renders
//! `<form method="post">`, [`SchemaForm`] inside it and its own submit
//! buttons; on a post it first asks [`handle_row_action`] whether an "add
//! row"/"remove row" button was pressed (then draws the form again with the
//! returned values), and otherwise calls [`form_to_json`]. Conversion errors
//! ([`FormError`]) and the engine's validation errors (JSON pointers, see
//! [`pointer_to_path`] and [`errors_for_form`]) are drawn beside their fields.
//!
//! Fields are ordered required first (in the order of `required`), then the
//! others in the order of the schema's map (alphabetical, as `serde_json` is
//! built without `preserve_order`). Date-times are edited in UTC.
//!
//! Plain serde types only: this module compiles in every feature set.

mod dates;
mod render;
mod values;

pub use dates::{datetime_from_input, datetime_to_input};
pub use render::{field_id, SchemaForm, SchemaView};
pub use tollgate_wire::schema_subset::{field_tree, humanize, FieldKind, FieldNode, TextFormat};
pub use values::{
    apply_row_action, default_value, default_values, errors_for_form, form_to_json, handle_row_action,
    json_to_values, locate, option_value, pointer_to_path, resume_field_to_path, row_action, row_count,
    values_from_fields, FormError, FormValues, RowAction, ADD_ROW, REMOVE_ROW,
};
