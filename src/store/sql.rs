//! SQL text shared by the back ends. The engine writes statements once, with
//! `?` placeholders (SQLite's); PostgreSQL gets them numbered (`$1`, `$2`, …).

use std::borrow::Cow;

/// Which SQL the connection speaks, for the few statements that differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    /// The statement in this dialect's placeholder syntax.
    pub fn placeholders(self, sql: &str) -> Cow<'_, str> {
        match self {
            Dialect::Sqlite => Cow::Borrowed(sql),
            Dialect::Postgres => numbered(sql),
        }
    }

    /// `INSERT INTO`, for a statement that writes several rows. On SQLite
    /// such a statement, in a transaction, keeps a statement journal (a copy
    /// of every page it changes) so that a failing row undoes only the
    /// statement; `OR FAIL` stops at the row instead and needs none. A
    /// command that fails is undone whole (its savepoint, or its batch), so
    /// nothing relies on the statement's own undo.
    pub fn insert_rows(self) -> &'static str {
        match self {
            Dialect::Sqlite => "INSERT OR FAIL INTO",
            Dialect::Postgres => "INSERT INTO",
        }
    }

    /// A JSON member as JSON text (a string member keeps its quotes), or NULL
    /// when it is missing: `col -> '$.a.b'` or `(col::json #> '{a,b}')::text`.
    pub fn json_member(self, column: &str, path: &str) -> String {
        match self {
            Dialect::Sqlite => format!("({column} -> '$.{path}')"),
            Dialect::Postgres => format!("(({column}::json #> '{{{}}}')::text)", path.replace('.', ",")),
        }
    }

    /// A JSON member as text: `json_extract(col, '$.a.b')` or `col::json #>> '{a,b}'`.
    /// `path` is a literal member path such as `data.audience`.
    pub fn json_text(self, column: &str, path: &str) -> String {
        match self {
            Dialect::Sqlite => format!("json_extract({column}, '$.{path}')"),
            Dialect::Postgres => format!("({column}::json #>> '{{{}}}')", path.replace('.', ",")),
        }
    }
}

/// Rewrites `?` placeholders as `$1`, `$2`, … (and `?N` as `$N`) outside
/// quoted literals and identifiers.
fn numbered(sql: &str) -> Cow<'_, str> {
    if !sql.contains('?') {
        return Cow::Borrowed(sql);
    }
    let mut out = String::with_capacity(sql.len() + 16);
    let mut n = 0;
    let mut quote: Option<char> = None;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match quote {
            Some(q) => {
                out.push(c);
                if c == q {
                    quote = None;
                }
            }
            None => match c {
                '\'' | '"' => {
                    quote = Some(c);
                    out.push(c);
                }
                '?' if chars.peek().is_some_and(char::is_ascii_digit) => out.push('$'),
                '?' => {
                    n += 1;
                    out.push('$');
                    out.push_str(&n.to_string());
                }
                _ => out.push(c),
            },
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_outside_literals_only() {
        let pg = Dialect::Postgres;
        assert_eq!(
            pg.placeholders("SELECT a FROM t WHERE b = ? AND c = '?' AND \"d?\" = ? LIMIT ?"),
            "SELECT a FROM t WHERE b = $1 AND c = '?' AND \"d?\" = $2 LIMIT $3"
        );
        // An escaped quote ('') closes and reopens the literal: still inside.
        assert_eq!(pg.placeholders("SELECT 'it''s ?', ?"), "SELECT 'it''s ?', $1");
        assert_eq!(pg.placeholders("SELECT 1"), "SELECT 1");
        assert_eq!(pg.placeholders("VALUES (?1, ?2, ?1)"), "VALUES ($1, $2, $1)");
        assert_eq!(Dialect::Sqlite.placeholders("x = ?"), "x = ?");
    }

    #[test]
    fn json_members_per_dialect() {
        assert_eq!(
            Dialect::Sqlite.json_text("i.payload", "data.audience"),
            "json_extract(i.payload, '$.data.audience')"
        );
        assert_eq!(
            Dialect::Postgres.json_text("i.payload", "data.audience"),
            "(i.payload::json #>> '{data,audience}')"
        );
    }
}
