//! The values a write command binds and reads, the same on every back end.
//!
//! Each value keeps its SQL type even when it is NULL: PostgreSQL types every
//! parameter, and a NULL bound as text cannot be stored in a BIGINT column.

use crate::error::{EngineError, Result};

/// A JSON value as the text a column stores. `serde_json::to_string` writes
/// into one buffer; `Value`'s `Display` (`to_string()`) goes through the
/// formatter piece by piece and cost twice the instructions on the resolve
/// path (docs/performance.md, sixth sitting).
pub fn json_text(value: &serde_json::Value) -> String {
    serde_json::to_string(value).expect("a JSON value always serialises: its keys are strings")
}

/// One SQL value: an integer, a text or a real, each possibly NULL.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    Int(Option<i64>),
    Text(Option<String>),
    Real(Option<f64>),
}

impl Val {
    pub fn is_null(&self) -> bool {
        matches!(self, Val::Int(None) | Val::Text(None) | Val::Real(None))
    }
}

/// A Rust value that binds as one [`Val`].
pub trait ToVal {
    fn to_val(&self) -> Val;
    /// The NULL of this type (what `None::<Self>` binds as).
    fn null() -> Val
    where
        Self: Sized;
}

impl ToVal for i64 {
    fn to_val(&self) -> Val {
        Val::Int(Some(*self))
    }
    fn null() -> Val {
        Val::Int(None)
    }
}

impl ToVal for i32 {
    fn to_val(&self) -> Val {
        Val::Int(Some(i64::from(*self)))
    }
    fn null() -> Val {
        Val::Int(None)
    }
}

impl ToVal for u16 {
    fn to_val(&self) -> Val {
        Val::Int(Some(i64::from(*self)))
    }
    fn null() -> Val {
        Val::Int(None)
    }
}

/// Booleans are stored as 0/1 integers on every back end.
impl ToVal for bool {
    fn to_val(&self) -> Val {
        Val::Int(Some(i64::from(*self)))
    }
    fn null() -> Val {
        Val::Int(None)
    }
}

impl ToVal for f64 {
    fn to_val(&self) -> Val {
        Val::Real(Some(*self))
    }
    fn null() -> Val {
        Val::Real(None)
    }
}

impl ToVal for str {
    fn to_val(&self) -> Val {
        Val::Text(Some(self.to_string()))
    }
}

impl ToVal for String {
    fn to_val(&self) -> Val {
        Val::Text(Some(self.clone()))
    }
    fn null() -> Val {
        Val::Text(None)
    }
}

impl<T: ToVal + ?Sized> ToVal for &T {
    fn to_val(&self) -> Val {
        (**self).to_val()
    }
    fn null() -> Val {
        // `Option<&T>` is NULL of T's type; unsized T (`str`) is text.
        Val::Text(None)
    }
}

impl<T: ToVal> ToVal for Option<T> {
    fn to_val(&self) -> Val {
        match self {
            Some(v) => v.to_val(),
            None => T::null(),
        }
    }
    fn null() -> Val {
        T::null()
    }
}

impl ToVal for Val {
    fn to_val(&self) -> Val {
        self.clone()
    }
    fn null() -> Val {
        Val::Text(None)
    }
}

/// Builds the argument list of a statement: `args![a, b]`.
#[macro_export]
macro_rules! args {
    ($($v:expr),* $(,)?) => {
        &[$($crate::store::ToVal::to_val(&$v)),*][..]
    };
}

/// One result row, its columns in the order the statement selected them.
#[derive(Debug, Clone, Default)]
pub struct Row {
    pub(crate) values: Vec<Val>,
}

impl Row {
    pub fn get<T: FromVal>(&self, index: usize) -> Result<T> {
        let v = self
            .values
            .get(index)
            .ok_or_else(|| EngineError::Storage(format!("column {index} was not selected")))?;
        T::from_val(v).map_err(|e| EngineError::Storage(format!("column {index}: {e}")))
    }
}

impl Row {
    /// The columns of a row the read pool returned, so rows read by either
    /// driver go through the same decoder (`RunRow::from_row`, …).
    pub fn from_any(row: &sqlx::any::AnyRow) -> Result<Row> {
        use sqlx::any::AnyTypeInfoKind as Kind;
        use sqlx::{Row as _, TypeInfo as _, ValueRef as _};
        let mut values = Vec::with_capacity(row.len());
        for i in 0..row.len() {
            let raw = row.try_get_raw(i)?;
            let kind = raw.type_info().kind();
            values.push(match kind {
                _ if raw.is_null() || raw.type_info().is_null() => Val::Text(None),
                Kind::Bool => Val::Int(Some(i64::from(row.try_get::<bool, _>(i)?))),
                Kind::SmallInt => Val::Int(Some(i64::from(row.try_get::<i16, _>(i)?))),
                Kind::Integer => Val::Int(Some(i64::from(row.try_get::<i32, _>(i)?))),
                Kind::BigInt => Val::Int(Some(row.try_get::<i64, _>(i)?)),
                Kind::Real => Val::Real(Some(f64::from(row.try_get::<f32, _>(i)?))),
                Kind::Double => Val::Real(Some(row.try_get::<f64, _>(i)?)),
                Kind::Text | Kind::Blob | Kind::Null => Val::Text(Some(row.try_get::<String, _>(i)?)),
            });
        }
        Ok(Row { values })
    }

    /// A JSON column, decoded with an error naming it when it is not JSON.
    pub fn json(&self, index: usize) -> Result<serde_json::Value> {
        let text: String = self.get(index)?;
        serde_json::from_str(&text)
            .map_err(|e| EngineError::Storage(format!("column {index}: not JSON: {e}")))
    }

    /// A nullable JSON column.
    pub fn opt_json(&self, index: usize) -> Result<Option<serde_json::Value>> {
        match self.get::<Option<String>>(index)? {
            None => Ok(None),
            Some(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| EngineError::Storage(format!("column {index}: not JSON: {e}"))),
        }
    }

    /// Whether the statement selected column `index` (queries that load
    /// related rows as JSON add a column after the fixed ones).
    pub fn has(&self, index: usize) -> bool {
        index < self.values.len()
    }
}

/// A Rust value decoded from one [`Val`].
pub trait FromVal: Sized {
    fn from_val(v: &Val) -> std::result::Result<Self, String>;
}

impl FromVal for i64 {
    fn from_val(v: &Val) -> std::result::Result<Self, String> {
        match v {
            Val::Int(Some(i)) => Ok(*i),
            other => Err(format!("expected an integer, found {other:?}")),
        }
    }
}

impl FromVal for bool {
    fn from_val(v: &Val) -> std::result::Result<Self, String> {
        i64::from_val(v).map(|i| i != 0)
    }
}

impl FromVal for f64 {
    fn from_val(v: &Val) -> std::result::Result<Self, String> {
        match v {
            Val::Real(Some(r)) => Ok(*r),
            Val::Int(Some(i)) => Ok(*i as f64),
            other => Err(format!("expected a number, found {other:?}")),
        }
    }
}

impl FromVal for String {
    fn from_val(v: &Val) -> std::result::Result<Self, String> {
        match v {
            Val::Text(Some(s)) => Ok(s.clone()),
            other => Err(format!("expected a text, found {other:?}")),
        }
    }
}

impl<T: FromVal> FromVal for Option<T> {
    fn from_val(v: &Val) -> std::result::Result<Self, String> {
        if v.is_null() {
            Ok(None)
        } else {
            T::from_val(v).map(Some)
        }
    }
}

/// Enums and ids stored as their text (`status = 'pending'`), written as
/// text. An enum is read back with an error naming the value when it is
/// none of the enum's (`parse`); a stored id was checked on its way in
/// (`trusted`).
macro_rules! text_columns {
    (@decode parse $t:ty, $s:expr) => {
        $s.parse::<$t>().map_err(|e| format!("{e}"))
    };
    (@decode trusted $t:ty, $s:expr) => {
        Ok(<$t>::trusted($s.as_str()))
    };
    ($mode:ident: $($t:ty),+) => {$(
        impl ToVal for $t {
            fn to_val(&self) -> Val {
                Val::Text(Some(self.as_str().to_string()))
            }
            fn null() -> Val {
                Val::Text(None)
            }
        }
        impl FromVal for $t {
            fn from_val(v: &Val) -> std::result::Result<Self, String> {
                match v {
                    Val::Text(Some(s)) => text_columns!(@decode $mode $t, s),
                    other => Err(format!("expected a text, found {other:?}")),
                }
            }
        }
    )+};
}

text_columns!(parse:
    tollgate_wire::RunStatus,
    tollgate_wire::NodeStatus,
    tollgate_wire::InterruptStatus,
    tollgate_wire::OutboxStatus,
    tollgate_wire::OutboxKind,
    tollgate_wire::InterruptKind,
    tollgate_wire::ApprovalAction,
    tollgate_wire::EventType
);
text_columns!(trusted: tollgate_wire::RunId, tollgate_wire::TenantId, tollgate_wire::NodeId);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_none_binds_as_the_null_of_its_type() {
        let none_int: Option<i64> = None;
        let none_text: Option<String> = None;
        let some: Option<&str> = Some("x");
        let row = args![none_int, none_text, some, 3i64, true, "t"];
        assert_eq!(
            row,
            &[
                Val::Int(None),
                Val::Text(None),
                Val::Text(Some("x".into())),
                Val::Int(Some(3)),
                Val::Int(Some(1)),
                Val::Text(Some("t".into())),
            ]
        );
    }

    #[test]
    fn decoding_checks_the_type_and_names_the_column() {
        let row = Row {
            values: vec![Val::Int(Some(7)), Val::Text(None), Val::Text(Some("a".into()))],
        };
        assert_eq!(row.get::<i64>(0).unwrap(), 7);
        assert!(row.get::<bool>(0).unwrap());
        assert_eq!(row.get::<Option<i64>>(1).unwrap(), None);
        assert_eq!(row.get::<String>(2).unwrap(), "a");
        let err = row.get::<i64>(2).unwrap_err().to_string();
        assert!(err.contains("column 2"), "{err}");
        assert!(row.get::<String>(1).is_err(), "NULL is not a text");
        assert!(row.get::<i64>(9).is_err());
    }

    #[test]
    fn enum_columns_are_decoded_once_with_an_error() {
        use tollgate_wire::RunStatus;
        let row = Row {
            values: vec![
                Val::Text(Some("waiting-input".into())),
                Val::Text(Some("paused".into())),
            ],
        };
        assert_eq!(row.get::<RunStatus>(0).unwrap(), RunStatus::WaitingInput);
        let err = row.get::<RunStatus>(1).unwrap_err().to_string();
        assert!(
            err.contains("column 1") && err.contains("\"paused\" is not a run status"),
            "{err}"
        );
        assert_eq!(RunStatus::Failed.to_val(), Val::Text(Some("failed".into())));
    }

    #[test]
    fn json_text_is_the_text_display_wrote() {
        // Stored idempotency digests were taken over `Display`'s text: the
        // faster writer must produce the same bytes.
        let value = serde_json::json!({
            "quote": "say \"yes\"\n\ttab \u{1} é 🦀 </script>",
            "numbers": [0, -1, 1.5, 1e300, u64::MAX, i64::MIN],
            "nested": { "b": null, "a": [true, false, {}, []] },
            "": ""
        });
        assert_eq!(json_text(&value), value.to_string());
        assert_eq!(json_text(&serde_json::Value::Null), "null");
    }
}
