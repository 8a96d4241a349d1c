//! The rows the runtime works on, decoded once, and the statements that
//! load them: a run with its node states (locked for the command where the
//! back end has row locks), an interrupt with its votes, the tenant's
//! directory for notifications.

use crate::approval;
use crate::args;
use crate::clock::Millis;
use crate::error::{EngineError, Result};
use crate::interrupt::InterruptKind;
use crate::store::nodes::InterruptRef;
use crate::store::{Dialect, NewestEvent, Row, WriteConn};
use serde_json::Value;
use std::sync::LazyLock;
use tollgate_wire::{InterruptStatus, NodeId, RunId, RunStatus, TenantId};

/// A run as stored, each column decoded once: statuses as enums, JSON
/// columns as values (a column that is not what it should be is an error,
/// never a silent default).
#[derive(Debug, Clone)]
pub(crate) struct RunRow {
    pub run_id: RunId,
    pub tenant: TenantId,
    pub workflow_id: String,
    pub workflow_digest: String,
    pub status: RunStatus,
    /// `RunSnapshot.owner`.
    pub owner: Value,
    /// The person the run is for, when its creator acted on their behalf.
    pub requested_by: Option<String>,
    pub current_node_id: Option<NodeId>,
    pub error: Option<Value>,
    pub inputs: Value,
    pub configurable: Option<Value>,
    pub tags: Option<Value>,
    pub metadata: Option<Value>,
    pub callback_url: Option<String>,
    pub next_sequence: i64,
    pub created_at: Millis,
    pub completed_at: Option<Millis>,
    /// The run's node states (`runs.nodes`, see [`node_document`]), when
    /// loaded for a command.
    pub nodes_json: Option<String>,
    /// The run's newest event when loaded for a command on SQLite
    /// (`runs.last_event`), so appending to its chain need not read it again.
    pub newest_event: NewestEvent,
    /// SQLite's rowid of the run's row, when loaded for a command: the
    /// command's update goes straight to the row (`run_rowid`).
    pub row_id: Option<i64>,
}

pub(crate) const RUN_COLUMNS: &str = "run_id, tenant, workflow_id, workflow_digest, status, owner, current_node_id, error, inputs, configurable, tags, metadata, callback_url, next_sequence, created_at, completed_at, requested_by";

impl RunRow {
    /// Decodes a row selected with [`RUN_COLUMNS`] (and optionally `nodes_json`), from either pool.
    pub(crate) fn from_row(row: &Row) -> Result<RunRow> {
        Ok(RunRow {
            run_id: row.get(0)?,
            tenant: row.get(1)?,
            workflow_id: row.get(2)?,
            workflow_digest: row.get(3)?,
            status: row.get(4)?,
            owner: row.json(5)?,
            current_node_id: row.get(6)?,
            error: row.opt_json(7)?,
            inputs: row.json(8)?,
            configurable: row.opt_json(9)?,
            tags: row.opt_json(10)?,
            metadata: row.opt_json(11)?,
            callback_url: row.get(12)?,
            next_sequence: row.get(13)?,
            created_at: row.get(14)?,
            completed_at: row.get(15)?,
            requested_by: row.get(16)?,
            nodes_json: if row.has(17) { row.get(17)? } else { None },
            newest_event: if row.has(18) {
                NewestEvent::Known(row.get(18)?)
            } else {
                NewestEvent::Unknown
            },
            row_id: if row.has(19) { row.get(19)? } else { None },
        })
    }

    pub fn is_terminal(&self) -> bool {
        self.status.is_terminal()
    }

    /// A running run of workflow `w` owned by nobody in particular, with
    /// nothing loaded beside it: the base of unit tests' runs.
    #[cfg(test)]
    pub(crate) fn sample(run_id: &str) -> RunRow {
        RunRow {
            tenant: TenantId::trusted(crate::ids::tenant_of(run_id)),
            run_id: RunId::trusted(run_id),
            workflow_id: "w".into(),
            workflow_digest: "d".into(),
            status: RunStatus::Running,
            owner: serde_json::json!({}),
            requested_by: None,
            current_node_id: None,
            error: None,
            inputs: serde_json::json!({}),
            configurable: None,
            tags: None,
            metadata: None,
            callback_url: None,
            next_sequence: 1,
            created_at: 0,
            completed_at: None,
            nodes_json: None,
            newest_event: NewestEvent::Unknown,
            row_id: None,
        }
    }

    /// The subject id of the run's owner (`owner.subject.subjectId`).
    pub fn owner_subject_id(&self) -> String {
        self.owner["subject"]["subjectId"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// The person whose request the run is: `requestedBy`, else the owner.
    pub fn requester(&self) -> String {
        self.requested_by
            .clone()
            .unwrap_or_else(|| self.owner_subject_id())
    }

    /// Everyone who may not approve the run's gates where self-approval is
    /// refused: the owner, and the person the run is for.
    pub fn requesters(&self) -> Vec<String> {
        let owner = self.owner_subject_id();
        match &self.requested_by {
            Some(person) if *person != owner => vec![owner, person.clone()],
            _ => vec![owner],
        }
    }
}

/// An interrupt as stored, decoded once (see [`RunRow`]).
#[derive(Debug, Clone)]
#[allow(dead_code)] // every column is selected; not all are read yet
pub(crate) struct InterruptRow {
    pub interrupt_id: String,
    pub run_id: RunId,
    pub node_id: NodeId,
    pub key: String,
    pub visit: i64,
    pub kind: InterruptKind,
    pub status: InterruptStatus,
    /// The `interrupt.requested` payload's JSON text (`kind`, `key`, `data`,
    /// `resumeSchema`, …), decoded where it is read ([`InterruptRow::payload`],
    /// [`InterruptRow::data_member`]): a resolve needs at most a member of it.
    pub payload: String,
    /// The contract's JSON text: compiled (and cached by this text) where it is used.
    pub contract: String,
    /// The request's JSON text (shown by views, never read by a resolve).
    pub request: Option<String>,
    /// Approval gates' rules; `None` for other kinds.
    pub rules: Option<approval::ApprovalRules>,
    pub workflow_id: String,
    pub title: String,
    /// Whose request this is: the run's `requestedBy`, else its owner
    /// (`RunRow::requester`); the inbox splits on it and mail never offers
    /// them a decision.
    pub owner_subject: String,
    pub created_at: Millis,
    pub deadline_at: Option<Millis>,
    pub resolved_at: Option<Millis>,
    /// The resolution's JSON text (shown by views).
    pub resolution: Option<String>,
    /// The inbox rule group the interrupt counts in while pending.
    pub inbox_group: Option<String>,
    /// The `votes` column (`store::votes`), when loaded for a command
    /// ([`latest_interrupt_sql`]).
    pub votes_json: Option<String>,
    /// Of the voters in `votes_json`, those who hold the override now: a
    /// JSON array of principal ids (`null` when none).
    pub override_voters: Option<String>,
    /// SQLite's `rowid` of the row, where it was read with
    /// [`latest_interrupt_sql`] (on PostgreSQL always `None`): a command's
    /// update finds the row by it instead of searching the id index again,
    /// a page fewer to read in a large store. Only a command uses it, in
    /// the transaction that read it; the read pool's copies go to views.
    pub row_id: Option<i64>,
}

pub(crate) const INTERRUPT_COLUMNS: &str = "interrupt_id, run_id, node_id, key, visit, kind, status, payload, contract, request, eligibility, workflow_id, title, owner_subject, created_at, deadline_at, resolved_at, resolution, inbox_group";

impl InterruptRow {
    /// The `interrupt.requested` payload.
    pub(crate) fn payload(&self) -> Result<Value> {
        serde_json::from_str(&self.payload).map_err(|e| self.not_json("payload", e))
    }

    /// One member of the payload's `data` (`artifactData`, `audience`, …),
    /// decoded alone: the rest of the payload is skipped, not built.
    pub(crate) fn data_member(&self, member: &str) -> Result<Option<Value>> {
        // The column is written by serde_json, which spells every key out
        // (no `\u` escapes for letters): a name that is nowhere in the text
        // is no member of it. Most approvals carry no `artifactData`.
        if !self.payload.contains(member) {
            return Ok(None);
        }
        let seed = Member {
            name: "data",
            then: Member {
                name: member,
                then: std::marker::PhantomData::<Value>,
            },
        };
        let mut de = serde_json::Deserializer::from_str(&self.payload);
        let found = serde::de::DeserializeSeed::deserialize(seed, &mut de)
            .and_then(|found| de.end().map(|()| found))
            .map_err(|e| self.not_json("payload", e))?;
        Ok(found.flatten().filter(|v| !v.is_null()))
    }

    /// The request and the resolution, decoded.
    pub(crate) fn request_and_resolution(&self) -> Result<(Option<Value>, Option<Value>)> {
        let decode = |column: &str, text: &Option<String>| {
            text.as_deref()
                .map(serde_json::from_str::<Value>)
                .transpose()
                .map_err(|e| self.not_json(column, e))
        };
        Ok((
            decode("request", &self.request)?,
            decode("resolution", &self.resolution)?,
        ))
    }

    fn not_json(&self, column: &str, e: serde_json::Error) -> EngineError {
        EngineError::Storage(format!(
            "interrupts.{column} of {}: not JSON: {e}",
            self.interrupt_id
        ))
    }

    /// Decodes a row selected with [`INTERRUPT_COLUMNS`] (and optionally
    /// `votes` and the override holders among its voters), from either pool.
    pub(crate) fn from_row(row: &Row) -> Result<InterruptRow> {
        let kind: InterruptKind = row.get(5)?;
        // Straight into the rules (`null` is none), not through a `Value`.
        let rules = match row.get::<Option<String>>(10)? {
            None => None,
            Some(text) => serde_json::from_str::<Option<approval::ApprovalRules>>(&text)
                .map_err(|e| EngineError::Storage(format!("interrupts.eligibility: {e}")))?,
        };
        Ok(InterruptRow {
            interrupt_id: row.get(0)?,
            run_id: row.get(1)?,
            node_id: row.get(2)?,
            key: row.get(3)?,
            visit: row.get(4)?,
            kind,
            status: row.get(6)?,
            payload: row.get(7)?,
            contract: row.get(8)?,
            request: row.get(9)?,
            rules,
            workflow_id: row.get(11)?,
            title: row.get(12)?,
            owner_subject: row.get(13)?,
            created_at: row.get(14)?,
            deadline_at: row.get(15)?,
            resolved_at: row.get(16)?,
            resolution: row.get(17)?,
            inbox_group: row.get(18)?,
            votes_json: if row.has(19) { row.get(19)? } else { None },
            override_voters: if row.has(20) { row.get(20)? } else { None },
            row_id: if row.has(21) { row.get(21)? } else { None },
        })
    }
}

/// Decodes member `name` of a JSON object with `then` and skips the rest of
/// it; `None` when the value is not an object or has no such member (as
/// `value[name]` is `null` there).
#[derive(Clone, Copy)]
struct Member<'n, S> {
    name: &'n str,
    then: S,
}

impl<'de, S: serde::de::DeserializeSeed<'de> + Copy> serde::de::DeserializeSeed<'de> for Member<'_, S> {
    type Value = Option<S::Value>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, S: serde::de::DeserializeSeed<'de> + Copy> serde::de::Visitor<'de> for Member<'_, S> {
    type Value = Option<S::Value>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "any JSON value")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == self.name {
                // The last of duplicate members, as `serde_json::Value` keeps.
                found = Some(map.next_value_seed(self.then)?);
            } else {
                map.next_value::<serde::de::IgnoredAny>()?;
            }
        }
        Ok(found)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_unit<E>(self) -> std::result::Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_bool<E>(self, _: bool) -> std::result::Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_i64<E>(self, _: i64) -> std::result::Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_u64<E>(self, _: u64) -> std::result::Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_f64<E>(self, _: f64) -> std::result::Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_str<E>(self, _: &str) -> std::result::Result<Self::Value, E> {
        Ok(None)
    }
}

// Statements the writer runs on every command, built once (they splice in
// the column lists) so the hot path neither formats nor allocates SQL text.
// Each loads related rows as one JSON column, in one round trip.
/// A run with its node states, newest event and rowid (SQLite); `rows` says which.
fn run_for_update(rows: &str) -> String {
    format!("SELECT {RUN_COLUMNS}, nodes, last_event, rowid FROM runs WHERE {rows}")
}
/// The run at the rowid its id names (`run_rowid`), the id still compared.
static LOAD_RUN_AT_ROW: LazyLock<String> = LazyLock::new(|| run_for_update("rowid = ? AND run_id = ?"));
static LOAD_RUN_FOR_UPDATE: LazyLock<String> = LazyLock::new(|| run_for_update("run_id = ?"));
/// The run row stays locked until the command commits: commands on one run
/// from any instance take turns, and each sees what the previous one wrote.
static LOAD_RUN_FOR_UPDATE_PG: LazyLock<String> =
    LazyLock::new(|| format!("SELECT {RUN_COLUMNS}, nodes FROM runs WHERE run_id = $1 FOR UPDATE"));
/// An interrupt with its votes, and which of its voters hold the override
/// now (read at decision time, as the directory says; not looked up when no
/// one has voted, a resolve's usual case), then its rowid; `rows` says which.
fn interrupt_with_votes(rows: &str) -> String {
    format!(
        "SELECT {INTERRUPT_COLUMNS}, votes, CASE WHEN votes = '[]' THEN NULL ELSE \
           (SELECT json_group_array(p.id) FROM principals p WHERE p.is_override = 1 \
           AND p.id IN (SELECT v.value ->> 0 FROM json_each(interrupts.votes) v)) END, \
         rowid FROM interrupts WHERE {rows}"
    )
}
/// The newest interrupt of a node.
static LATEST_INTERRUPT: LazyLock<String> =
    LazyLock::new(|| interrupt_with_votes("run_id = ? AND node_id = ? ORDER BY visit DESC LIMIT 1"));
/// The interrupt a node state names (`nodes::InterruptRef`), if that row
/// is still that node's interrupt of that visit.
static INTERRUPT_BY_ROW: LazyLock<String> =
    LazyLock::new(|| interrupt_with_votes("rowid = ? AND run_id = ? AND node_id = ? AND visit = ?"));
static LATEST_INTERRUPT_PG: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {INTERRUPT_COLUMNS}, votes, CASE WHEN votes = '[]' THEN NULL ELSE \
           (SELECT json_agg(p.id)::text FROM principals p WHERE p.is_override = 1 \
           AND p.id IN (SELECT v ->> 0 FROM json_array_elements(interrupts.votes::json) v)) END \
         FROM interrupts WHERE run_id = $1 AND node_id = $2 ORDER BY visit DESC LIMIT 1"
    )
});
pub(crate) fn latest_interrupt_sql(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Sqlite => &LATEST_INTERRUPT,
        Dialect::Postgres => &LATEST_INTERRUPT_PG,
    }
}
static PENDING_INTERRUPT: LazyLock<String> = LazyLock::new(|| {
    format!("SELECT {INTERRUPT_COLUMNS} FROM interrupts WHERE interrupt_id = ? AND status = 'pending'")
});
/// The run with its node states, in one statement (the writer's hot path),
/// locked for this command where the back end has row locks. On SQLite the
/// row is first looked for at the rowid its id names, then (a row stored
/// elsewhere, or no such run) by its id.
pub(crate) fn load_run_for_update(conn: &WriteConn, run_id: &str) -> Result<Option<RunRow>> {
    match conn.dialect() {
        Dialect::Sqlite => {
            if let Some(row_id) = super::run_rowid::of(run_id) {
                let at_row = conn.query_opt(&LOAD_RUN_AT_ROW, args![row_id, run_id], RunRow::from_row)?;
                if at_row.is_some() {
                    return Ok(at_row);
                }
            }
            conn.query_opt(&LOAD_RUN_FOR_UPDATE, args![run_id], RunRow::from_row)
        }
        Dialect::Postgres => conn.query_opt(&LOAD_RUN_FOR_UPDATE_PG, args![run_id], RunRow::from_row),
    }
}

/// `Store::latest_interrupt` on the writer, inside a command (after the run
/// is locked). Where the node state says which row that is (`known`, on
/// SQLite), the row is read by its rowid; should that row not be the
/// node's interrupt of that visit (rowids renumbered by a `VACUUM`), the
/// node's interrupts are searched as without it.
pub(crate) fn latest_interrupt_for_update(
    conn: &WriteConn,
    run_id: &str,
    node_id: &str,
    known: Option<InterruptRef>,
) -> Result<Option<InterruptRow>> {
    if let (Some(known), Dialect::Sqlite) = (known, conn.dialect()) {
        if let Some(row) = interrupt_by_row(conn, run_id, node_id, known)? {
            // Every test's resolve checks that the node state named the newest one.
            #[cfg(debug_assertions)]
            {
                let newest =
                    conn.query_opt(&LATEST_INTERRUPT, args![run_id, node_id], InterruptRow::from_row)?;
                assert_eq!(
                    newest.map(|n| n.interrupt_id),
                    Some(row.interrupt_id.clone()),
                    "the node state of {run_id}/{node_id} names an interrupt that is not its newest"
                );
            }
            return Ok(Some(row));
        }
        tracing::warn!(
            run_id,
            node_id,
            "a node's interrupt was not at the row its state names; searched instead"
        );
    }
    conn.query_opt(
        latest_interrupt_sql(conn.dialect()),
        args![run_id, node_id],
        InterruptRow::from_row,
    )
}

/// The interrupt a node state names, on SQLite, if that row is still the
/// node's interrupt of that visit.
pub(crate) fn interrupt_by_row(
    conn: &WriteConn,
    run_id: &str,
    node_id: &str,
    known: InterruptRef,
) -> Result<Option<InterruptRow>> {
    conn.query_opt(
        &INTERRUPT_BY_ROW,
        args![known.row_id, run_id, node_id, known.visit],
        InterruptRow::from_row,
    )
}

/// The rowid the next interrupt a command inserts is stored at, on SQLite:
/// the table's largest plus one. The writer holds the database's write lock
/// and the batch's earlier commands have written theirs, so no other insert
/// can take it. PostgreSQL has no rowid: `None`; so too past the largest
/// rowid there is, where SQLite finds a free one itself and the node's
/// state names none.
pub(crate) fn next_interrupt_row(conn: &WriteConn) -> Result<Option<i64>> {
    match conn.dialect() {
        Dialect::Sqlite => {
            let largest = conn.query_scalar::<Option<i64>>("SELECT max(rowid) FROM interrupts", &[])?;
            Ok(largest.flatten().unwrap_or(0).checked_add(1))
        }
        Dialect::Postgres => Ok(None),
    }
}

/// A pending interrupt by id, on the writer.
pub(crate) fn pending_interrupt_for_update(
    conn: &WriteConn,
    interrupt_id: &str,
) -> Result<Option<InterruptRow>> {
    conn.query_opt(&PENDING_INTERRUPT, args![interrupt_id], InterruptRow::from_row)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row_with_payload(payload: &str) -> InterruptRow {
        InterruptRow {
            interrupt_id: "t/i1".into(),
            run_id: RunId::trusted("t/r1"),
            node_id: NodeId::trusted("gate"),
            key: "k".into(),
            visit: 0,
            kind: InterruptKind::Approval,
            status: InterruptStatus::Pending,
            payload: payload.into(),
            contract: "{}".into(),
            request: Some(r#"{"q": 1}"#.into()),
            rules: None,
            workflow_id: "w".into(),
            title: "t".into(),
            owner_subject: "o".into(),
            created_at: 0,
            deadline_at: None,
            resolved_at: None,
            resolution: None,
            inbox_group: None,
            votes_json: None,
            override_voters: None,
            row_id: None,
        }
    }

    #[test]
    fn a_data_member_is_what_the_whole_payload_says() {
        let payloads = [
            json!({"kind": "approval", "data": {"artifactData": {"amount": 5, "tags": ["}", "{"]}, "title": "x"}}),
            json!({"resumeSchema": {"data": {"artifactData": 1}}, "data": {"audience": ["ann"]}, "key": "k"}),
            json!({"data": {"artifactData": null}}),
            json!({"data": "not an object"}),
            json!({"data": [1, {"artifactData": 2}]}),
            json!({"kind": "approval"}),
            json!(["data"]),
            // The name only as a value: parsed, and no member.
            json!({"data": {"title": "artifactData audience questions"}}),
        ];
        for payload in payloads {
            let row = row_with_payload(&payload.to_string());
            for member in ["artifactData", "audience", "title", "questions"] {
                let whole = &row.payload().unwrap()["data"][member];
                let expected = (!whole.is_null()).then(|| whole.clone());
                assert_eq!(
                    row.data_member(member).unwrap(),
                    expected,
                    "{member} of {payload}"
                );
            }
        }
    }

    #[test]
    fn the_last_of_duplicate_members_counts_as_in_a_value() {
        let text = r#"{"data": {"artifactData": 1, "artifactData": 2}, "data": {"artifactData": 3, "x": 0}}"#;
        let row = row_with_payload(text);
        let whole: Value = serde_json::from_str(text).unwrap();
        assert_eq!(
            row.data_member("artifactData").unwrap(),
            Some(whole["data"]["artifactData"].clone())
        );
        assert_eq!(row.data_member("artifactData").unwrap(), Some(json!(3)));
    }

    #[test]
    fn a_damaged_payload_is_a_storage_error_naming_the_interrupt() {
        // (Each names the member: a text without the name is not parsed.)
        for text in [
            r#"{"data": {"artifactData": 1}"#,
            r#"{"data": {"artifactData": 1}} trailing"#,
            "artifactData",
        ] {
            let row = row_with_payload(text);
            for err in [
                row.data_member("artifactData").unwrap_err(),
                row.payload().unwrap_err(),
            ] {
                assert!(
                    matches!(&err, EngineError::Storage(m) if m.contains("interrupts.payload of t/i1")),
                    "{text:?}: {err:?}"
                );
            }
        }
        let (request, resolution) = row_with_payload("{}").request_and_resolution().unwrap();
        assert_eq!((request, resolution), (Some(json!({"q": 1})), None));
    }

    /// Migration 0031 (postgres/0017) on a store written before it: every
    /// interrupt keeps its row, on SQLite at its rowid (which node states
    /// name), and a second interrupt for the same visit of a node is
    /// refused by `interrupts_latest` now, as by the constraint dropped.
    #[tokio::test]
    async fn the_migration_keeps_every_interrupt_row_and_one_per_visit() {
        use crate::store::{testing, Durability, Store};
        let insert = |id: &str, node: &str, visit: i64| {
            format!(
                "INSERT INTO interrupts (interrupt_id, run_id, node_id, key, visit, kind, status, payload, contract, \
                 eligibility, workflow_id, title, owner_subject, created_at) VALUES ('{id}', 't/r', '{node}', \
                 't/r:{node}:{visit}', {visit}, 'approval', 'pending', '{{}}', '{{}}', '{{}}', 'w', 'Gate', 'o', 0);"
            )
        };
        // Rowids 1 to 3, then 2 deleted: a copy that renumbered would show.
        let setup = [
            insert("t/i1", "gate", 0),
            insert("t/i2", "gate", 1),
            insert("t/i3", "gate", 2),
        ]
        .concat()
            + "DELETE FROM interrupts WHERE interrupt_id = 't/i2';";
        let dir = tempfile::tempdir().unwrap();
        let url = testing::migrated_before(&dir.path().join("old.db"), "0031", "0017", &setup)
            .await
            .unwrap();
        let store = Store::open(&url, Durability::Full).await.unwrap();
        let on_sqlite = testing::postgres_server().is_none();
        let kept = store
            .write(move |conn| {
                let sql = if on_sqlite {
                    "SELECT rowid, interrupt_id FROM interrupts ORDER BY interrupt_id"
                } else {
                    "SELECT 0, interrupt_id FROM interrupts ORDER BY interrupt_id"
                };
                conn.query_map(sql, &[], |r| Ok((r.get::<i64>(0)?, r.get::<String>(1)?)))
            })
            .await
            .unwrap();
        let expected_rowids = if on_sqlite { [1, 3] } else { [0, 0] };
        assert_eq!(
            kept,
            vec![
                (expected_rowids[0], "t/i1".to_string()),
                (expected_rowids[1], "t/i3".to_string())
            ]
        );
        // The same visit under another id and key: refused, nothing stored.
        let duplicate = insert("t/i4", "gate", 2).replace("t/r:gate:2", "other-key");
        let refused = store.write(move |conn| conn.execute_batch(&duplicate)).await;
        assert!(
            matches!(&refused, Err(EngineError::Storage(m)) if m.to_lowercase().contains("unique")),
            "{refused:?}"
        );
        // Another visit, and the same visit of another node, are stored.
        let others = [insert("t/i5", "gate", 3), insert("t/i6", "other", 2)].concat();
        store
            .write(move |conn| conn.execute_batch(&others))
            .await
            .unwrap();
        let count = store
            .write(|conn| conn.query_scalar::<i64>("SELECT COUNT(*) FROM interrupts", &[]))
            .await
            .unwrap();
        assert_eq!(count, Some(4));
    }
}
