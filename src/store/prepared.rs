//! The SQLite writer's prepared statements (issue #17).
//!
//! rusqlite's statement cache finds a statement by its text: it hashes the
//! whole text with SipHash to take a statement out and again to put it back,
//! 8 % of the writer's instructions per resolve (a resolve runs ten
//! statements of 100–700 bytes; docs/performance.md). The statements a
//! command runs are `'static` strings (the [`super::Tx`] methods take
//! nothing else), so here the text's address and length find the
//! statement, and one comparison with the text it was prepared from
//! confirms it: a different text at that address (a freed string's memory
//! reused) is prepared afresh, so a statement never runs for a text it was
//! not prepared from.

use crate::error::Result;
use std::cell::RefCell;
use std::collections::hash_map::Entry;

/// Statements kept (each command shape uses a handful); past this many the
/// cache starts over, which only costs preparing them again.
const CAPACITY: usize = 128;

/// Where a statement's text lives: its address and length.
type Key = (usize, usize);

pub(super) struct Prepared<'c> {
    conn: &'c rusqlite::Connection,
    statements: RefCell<crate::FastMap<Key, (Box<str>, rusqlite::Statement<'c>)>>,
}

impl<'c> Prepared<'c> {
    pub(super) fn new(conn: &'c rusqlite::Connection) -> Prepared<'c> {
        Prepared {
            conn,
            statements: RefCell::new(crate::FastMap::with_capacity_and_hasher(
                CAPACITY,
                Default::default(),
            )),
        }
    }

    /// Runs `use_it` on the statement prepared from `sql` (preparing it the
    /// first time). `use_it` must not run statements itself.
    pub(super) fn with<T>(
        &self,
        sql: &str,
        use_it: impl FnOnce(&mut rusqlite::Statement<'c>) -> rusqlite::Result<T>,
    ) -> Result<T> {
        let key = (sql.as_ptr() as usize, sql.len());
        let mut statements = self.statements.borrow_mut();
        if statements.len() >= CAPACITY && !statements.contains_key(&key) {
            statements.clear();
        }
        let (_, statement) = match statements.entry(key) {
            Entry::Occupied(mut found) => {
                if *found.get().0 != *sql {
                    found.insert((sql.into(), self.conn.prepare(sql)?));
                }
                found.into_mut()
            }
            Entry::Vacant(slot) => slot.insert((sql.into(), self.conn.prepare(sql)?)),
        };
        Ok(use_it(statement)?)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.statements.borrow().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(prepared: &Prepared, sql: &str) -> i64 {
        prepared.with(sql, |s| s.query_row([], |row| row.get(0))).unwrap()
    }

    #[test]
    fn a_text_seen_again_runs_the_statement_prepared_for_it() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let prepared = Prepared::new(&conn);
        const SQL: &str = "SELECT 41 + 1";
        for _ in 0..3 {
            assert_eq!(one(&prepared, SQL), 42);
        }
        assert_eq!(prepared.len(), 1);
    }

    #[test]
    fn another_text_at_the_same_address_is_prepared_afresh() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let prepared = Prepared::new(&conn);
        let mut text = String::from("SELECT 1");
        assert_eq!(one(&prepared, &text), 1);
        // Same address, same length, another statement.
        text.replace_range(7..8, "2");
        assert_eq!(one(&prepared, &text), 2);
        assert_eq!(prepared.len(), 1);
    }

    #[test]
    fn past_its_capacity_it_starts_over_and_still_answers() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let prepared = Prepared::new(&conn);
        let texts: Vec<String> = (0..CAPACITY as i64 + 5).map(|i| format!("SELECT {i}")).collect();
        for (i, text) in texts.iter().enumerate() {
            assert_eq!(one(&prepared, text), i as i64);
        }
        assert!(prepared.len() <= CAPACITY);
        assert_eq!(one(&prepared, &texts[0]), 0);
    }

    #[test]
    fn a_failing_statement_is_an_error_and_the_cache_goes_on() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let prepared = Prepared::new(&conn);
        assert!(prepared.with("SELEC 1", |s| s.execute([])).is_err());
        conn.execute_batch("CREATE TABLE t (v INTEGER PRIMARY KEY)")
            .unwrap();
        let insert = "INSERT INTO t (v) VALUES (?)";
        prepared.with(insert, |s| s.execute([1])).unwrap();
        assert!(
            prepared.with(insert, |s| s.execute([1])).is_err(),
            "a duplicate key"
        );
        prepared.with(insert, |s| s.execute([2])).unwrap();
        assert_eq!(one(&prepared, "SELECT count(*) FROM t"), 2);
    }
}
