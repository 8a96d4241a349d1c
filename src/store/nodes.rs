//! A run's node states as stored: one JSON array in the run's row
//! (`runs.nodes`), read and written whole by the command that holds the run.

use super::rows::RunRow;
use crate::clock::Millis;
use crate::error::{EngineError, Result};
use serde::de::{Deserializer, SeqAccess, Visitor};
use serde::ser::{SerializeTuple, Serializer};
use serde::{Deserialize, Serialize};
use tollgate_wire::{NodeId, NodeStatus, RunStatus};

/// One node's scheduler state: an element of the run's `nodes` column.
#[derive(Debug, Clone)]
pub(crate) struct NodeRow {
    pub node_id: NodeId,
    pub status: NodeStatus,
    pub visits: i64,
    pub output: Option<String>,
    pub pending_in: String,
    pub due_at: Option<Millis>,
    pub waiting: Option<RunStatus>,
    /// The interrupt this node raised last, where the writer knows its row.
    pub interrupt: Option<InterruptRef>,
}

/// Where the interrupt a node raised last is stored, on SQLite: the row's
/// `rowid` (chosen by the command that raised it, `Exec::raise`) and the
/// visit it was raised at, written as `[rowid, visit]`. A resolve reads
/// that row by rowid instead of searching `interrupts_latest`, one B-tree
/// fewer to descend (`rows::latest_interrupt_for_update`). PostgreSQL has
/// no rowid: there it is never set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "(i64, i64)", into = "(i64, i64)")]
pub(crate) struct InterruptRef {
    pub row_id: i64,
    pub visit: i64,
}

impl From<(i64, i64)> for InterruptRef {
    fn from((row_id, visit): (i64, i64)) -> Self {
        InterruptRef { row_id, visit }
    }
}

impl From<InterruptRef> for (i64, i64) {
    fn from(r: InterruptRef) -> Self {
        (r.row_id, r.visit)
    }
}

impl NodeRow {
    /// When this node's `core.delay` timer fires: only while it waits for it.
    pub(crate) fn delay_due_at(&self) -> Option<Millis> {
        self.due_at.filter(|_| self.status == NodeStatus::Waiting)
    }
}

/// The run's node states, from the `nodes` column `load_run_for_update` selected.
pub(crate) fn node_rows(run: &RunRow) -> Result<Vec<NodeRow>> {
    // A command rewrites the whole column: a run loaded without it must not
    // be taken for one without node states.
    let text = run
        .nodes_json
        .as_deref()
        .ok_or_else(|| EngineError::Storage(format!("run {} loaded without its node states", run.run_id)))?;
    parse_node_rows(text)
}

/// One element of `runs.nodes` is an array: node id, status, visits, output
/// (JSON text), edges delivered (JSON text), timer, run status while
/// suspended, and last, where known, the interrupt the node raised
/// ([`InterruptRef`]). Elements written without it have seven members.
struct NodeElement<'a>(&'a NodeRow);

impl Serialize for NodeElement<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let r = self.0;
        let mut element = serializer.serialize_tuple(if r.interrupt.is_some() { 8 } else { 7 })?;
        element.serialize_element(&r.node_id)?;
        element.serialize_element(&r.status)?;
        element.serialize_element(&r.visits)?;
        element.serialize_element(&r.output)?;
        element.serialize_element(&r.pending_in)?;
        element.serialize_element(&r.due_at)?;
        element.serialize_element(&r.waiting)?;
        if let Some(interrupt) = &r.interrupt {
            element.serialize_element(interrupt)?;
        }
        element.end()
    }
}

impl<'de> Deserialize<'de> for NodeRow {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        struct Element;
        const EXPECTED: &str = "a node state: an array of seven or eight members";
        fn member<'de, A: SeqAccess<'de>, T: Deserialize<'de>>(
            seq: &mut A,
            index: usize,
        ) -> std::result::Result<T, A::Error> {
            seq.next_element()?
                .ok_or_else(|| serde::de::Error::invalid_length(index, &EXPECTED))
        }
        impl<'de> Visitor<'de> for Element {
            type Value = NodeRow;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(EXPECTED)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<NodeRow, A::Error> {
                Ok(NodeRow {
                    node_id: member(&mut seq, 0)?,
                    status: member(&mut seq, 1)?,
                    visits: member(&mut seq, 2)?,
                    output: member(&mut seq, 3)?,
                    pending_in: member(&mut seq, 4)?,
                    due_at: member(&mut seq, 5)?,
                    waiting: member(&mut seq, 6)?,
                    interrupt: seq.next_element::<Option<InterruptRef>>()?.flatten(),
                })
            }
        }
        deserializer.deserialize_seq(Element)
    }
}

/// Node states from the run's `nodes` column.
pub(crate) fn parse_node_rows(text: &str) -> Result<Vec<NodeRow>> {
    serde_json::from_str(text).map_err(|e| EngineError::Storage(format!("nodes of a run: {e}")))
}

/// A run's node states as a command writes them (`runs.nodes`, `runs.delay_due_at`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NodeDocument {
    /// The JSON array [`parse_node_rows`] reads.
    pub json: String,
    /// The earliest timer of a waiting node (the delay sweep's key).
    pub delay_due_at: Option<Millis>,
}

/// Writes every node state of a run into one [`NodeDocument`].
pub(crate) fn node_document(rows: &[NodeRow]) -> Result<NodeDocument> {
    let elements: Vec<NodeElement> = rows.iter().map(NodeElement).collect();
    let delay_due_at = rows.iter().filter_map(NodeRow::delay_due_at).min();
    Ok(NodeDocument {
        json: serde_json::to_string(&elements)?,
        delay_due_at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::rows::load_run_for_update;

    fn node(id: &str, status: NodeStatus, due_at: Option<Millis>) -> NodeRow {
        NodeRow {
            node_id: NodeId::trusted(id),
            status,
            visits: 2,
            output: Some(r#"{"said": "a \"quoted\" word"}"#.into()),
            pending_in: r#"{"e1": "completed"}"#.into(),
            due_at,
            waiting: (status == NodeStatus::Suspended).then_some(RunStatus::WaitingApproval),
            interrupt: None,
        }
    }

    #[test]
    fn an_element_names_its_interrupt_where_known_and_older_elements_read_without() {
        let gate = NodeRow {
            interrupt: Some(InterruptRef { row_id: 41, visit: 2 }),
            ..node("gate", NodeStatus::Suspended, None)
        };
        let rows = vec![node("a", NodeStatus::Completed, None), gate];
        let json = node_document(&rows).unwrap().json;
        let members: Vec<Vec<serde_json::Value>> = serde_json::from_str(&json).unwrap();
        // Written before the reference was kept, and still without one: seven members.
        assert_eq!(members[0].len(), 7, "{json}");
        assert_eq!(members[1].len(), 8, "{json}");
        assert_eq!(members[1][7], serde_json::json!([41, 2]));
        assert_eq!(fields(&parse_node_rows(&json).unwrap()), fields(&rows));
        // A null reference reads as none; a damaged element is an error, never a default.
        let mut null_ref = members[1].clone();
        null_ref[7] = serde_json::Value::Null;
        let parsed = parse_node_rows(&serde_json::to_string(&[&null_ref]).unwrap()).unwrap();
        assert_eq!(parsed[0].interrupt, None);
        for bad in [
            members[1][..6].to_vec(),
            [members[1].clone(), vec![serde_json::json!(9)]].concat(),
            [&members[1][..7], &[serde_json::json!([41])]].concat(),
        ] {
            let err = parse_node_rows(&serde_json::to_string(&[bad]).unwrap()).unwrap_err();
            assert!(
                matches!(&err, EngineError::Storage(m) if m.starts_with("nodes of a run")),
                "{err:?}"
            );
        }
    }

    /// The create names the row it stored the interrupt at, and a resolve's
    /// read by rowid finds it there (a miss would still decide correctly,
    /// by the search, and so would hide a wrong rowid or visit).
    #[tokio::test]
    async fn a_new_runs_state_names_the_row_its_interrupt_is_at() {
        use crate::store::rows::interrupt_by_row;
        use crate::store::{Durability, Store};
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("rows.db").display());
        let (engine, actor) = crate::store::testing::approval_engine(&url).await;
        let mut runs = Vec::new();
        for _ in 0..3 {
            runs.push(
                crate::store::testing::start_approval_run(&engine, &actor)
                    .await
                    .to_string(),
            );
        }
        let store = Store::open(&url, Durability::Full).await.unwrap();
        let found = store
            .write(move |conn| {
                let mut found = Vec::new();
                for run in &runs {
                    let known = gate_of(conn, run)?
                        .1
                        .expect("the create names its interrupt's row");
                    let row = interrupt_by_row(conn, run, "gate", known)?.expect("found by rowid");
                    assert_eq!((row.row_id, row.visit), (Some(known.row_id), known.visit));
                    assert_eq!(row.run_id.as_str(), run);
                    found.push(known.row_id);
                }
                Ok(found)
            })
            .await
            .unwrap();
        assert_eq!(found, vec![1, 2, 3]);
    }

    /// Past the largest rowid there is (a row put there by hand), a raise
    /// leaves the choice to SQLite and its node names no row: the resolve
    /// searches, as for a state written before rows were named.
    #[tokio::test]
    async fn past_the_largest_rowid_the_node_names_no_row() {
        use crate::store::{Durability, Store};
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("rows.db").display());
        let (engine, actor) = crate::store::testing::approval_engine(&url).await;
        let store = Store::open(&url, Durability::Full).await.unwrap();
        store
            .write(|conn| {
                conn.execute(
                    "INSERT INTO interrupts (rowid, interrupt_id, run_id, node_id, key, visit, kind, status, payload, contract, eligibility, workflow_id, title, owner_subject, created_at) \
                     VALUES (9223372036854775807, 't/last', 't/other', 'gate', 'k', 0, 'approval', 'resolved', '{}', '{}', 'null', 'w', 't', 'o', 0)",
                    &[],
                )?;
                Ok(())
            })
            .await
            .unwrap();
        let run = crate::store::testing::start_approval_run(&engine, &actor).await;
        let id = run.to_string();
        let known = store.write(move |conn| Ok(gate_of(conn, &id)?.1)).await.unwrap();
        assert_eq!(known, None);
        crate::store::testing::accept_gate(&engine, &actor, &run).await;
        let row = store
            .latest_interrupt(run.as_str(), "gate")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(row.status, tollgate_wire::InterruptStatus::Resolved);
    }

    /// A node state whose rowid names another run's interrupt (a store
    /// whose rowids were renumbered, or tampered with) decides nothing
    /// there: the resolve finds the node's own interrupt by searching.
    #[tokio::test]
    async fn a_rowid_that_names_another_row_falls_back_to_the_search() {
        use crate::store::{Durability, Store};
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("rows.db").display());
        let (engine, actor) = crate::store::testing::approval_engine(&url).await;
        let mut runs = Vec::new();
        for _ in 0..2 {
            runs.push(crate::store::testing::start_approval_run(&engine, &actor).await);
        }
        let store = Store::open(&url, Durability::Full).await.unwrap();
        let (first, second) = (runs[0].to_string(), runs[1].to_string());
        store
            .write(move |conn| {
                let (mut rows, _) = gate_of(conn, &first)?;
                let theirs = gate_of(conn, &second)?
                    .1
                    .expect("the create names its interrupt's row");
                for n in rows.iter_mut().filter(|n| n.node_id.as_str() == "gate") {
                    n.interrupt = Some(theirs);
                }
                conn.execute(
                    "UPDATE runs SET nodes = ? WHERE run_id = ?",
                    crate::args![node_document(&rows)?.json, first.as_str()],
                )?;
                Ok(())
            })
            .await
            .unwrap();
        crate::store::testing::accept_gate(&engine, &actor, &runs[0]).await;
        let status = |run: String| {
            let store = &store;
            async move {
                let row = store.latest_interrupt(&run, "gate").await.unwrap().unwrap();
                (row.run_id.to_string(), row.status)
            }
        };
        assert_eq!(
            status(runs[0].to_string()).await,
            (runs[0].to_string(), tollgate_wire::InterruptStatus::Resolved)
        );
        assert_eq!(
            status(runs[1].to_string()).await,
            (runs[1].to_string(), tollgate_wire::InterruptStatus::Pending)
        );
    }

    /// A stored run's node states, and the interrupt row its node `gate` names.
    fn gate_of(conn: &crate::store::WriteConn, run: &str) -> Result<(Vec<NodeRow>, Option<InterruptRef>)> {
        let rows = node_rows(&load_run_for_update(conn, run)?.expect("stored"))?;
        let known = rows
            .iter()
            .find(|n| n.node_id.as_str() == "gate")
            .expect("gate")
            .interrupt;
        Ok((rows, known))
    }

    fn fields(rows: &[NodeRow]) -> Vec<String> {
        rows.iter().map(|r| format!("{r:?}")).collect()
    }

    #[test]
    fn a_node_document_reads_back_as_written_and_keys_the_earliest_waiting_delay() {
        let rows = vec![
            node("a", NodeStatus::Completed, Some(10)),
            node("delay1", NodeStatus::Waiting, Some(500)),
            node("delay2", NodeStatus::Waiting, Some(300)),
            node("gate", NodeStatus::Suspended, None),
            NodeRow {
                output: None,
                ..node("idle", NodeStatus::Idle, None)
            },
        ];
        let doc = node_document(&rows).unwrap();
        // A finished delay's old timer is not the run's next one.
        assert_eq!(doc.delay_due_at, Some(300));
        assert_eq!(fields(&parse_node_rows(&doc.json).unwrap()), fields(&rows));
        assert_eq!(node_document(&rows[..1]).unwrap().delay_due_at, None);
        assert_eq!(node_document(&[]).unwrap().json, "[]");
    }

    #[test]
    fn a_run_loaded_without_its_node_states_is_refused() {
        let run = RunRow::sample("t/r1");
        assert!(matches!(node_rows(&run), Err(EngineError::Storage(m)) if m.contains("t/r1")));
    }

    /// Migration 0022 (postgres/0010) on a store written before it: each
    /// run's node states move into its row, and the delay sweep finds the
    /// waiting timers. On the back end the test run asks for.
    #[tokio::test]
    async fn the_migration_moves_node_states_into_the_run_row() {
        use crate::store::{Durability, Store};
        let dir = tempfile::tempdir().unwrap();
        let a = vec![
            node("done", NodeStatus::Completed, Some(50)),
            node("gate", NodeStatus::Suspended, None),
            node("wait", NodeStatus::Waiting, Some(500)),
        ];
        let c = vec![node("wait", NodeStatus::Waiting, Some(100))];
        let quote =
            |t: Option<&str>| t.map_or("NULL".to_string(), |t| format!("'{}'", t.replace('\'', "''")));
        let mut setup = String::new();
        for run in ["t/a", "t/b", "t/c"] {
            setup.push_str(&format!(
                "INSERT INTO runs (run_id, tenant, workflow_id, workflow_digest, status, owner, inputs, next_sequence, created_at) \
                 VALUES ('{run}', 't', 'w', 'd', 'running', '{{}}', '{{}}', 1, 0);\n"
            ));
        }
        for (run, rows) in [("t/a", &a), ("t/c", &c)] {
            for r in rows.iter() {
                setup.push_str(&format!(
                    "INSERT INTO node_states (run_id, node_id, status, visits, output, pending_in, due_at, waiting) \
                     VALUES ('{run}', '{}', '{}', {}, {}, {}, {}, {});\n",
                    r.node_id,
                    r.status.as_str(),
                    r.visits,
                    quote(r.output.as_deref()),
                    quote(Some(&r.pending_in)),
                    r.due_at.map_or("NULL".into(), |d| d.to_string()),
                    quote(r.waiting.map(RunStatus::as_str)),
                ));
            }
        }
        let url = crate::store::testing::migrated_before(&dir.path().join("old.db"), "0022", "0010", &setup)
            .await
            .unwrap();
        let store = Store::open(&url, Durability::Full).await.unwrap();
        let (nodes, _) = store.projection("t/a").await.unwrap();
        let expected: Vec<_> = a
            .iter()
            .map(|r| (r.node_id.to_string(), r.status, r.visits))
            .collect();
        assert_eq!(nodes, expected);
        assert!(store.projection("t/b").await.unwrap().0.is_empty());
        let loaded = store
            .write(|conn| {
                let mut all = Vec::new();
                for id in ["t/a", "t/b", "t/c"] {
                    let run = load_run_for_update(conn, id)?.expect("stored");
                    let mut rows = node_rows(&run)?;
                    rows.sort_by(|x, y| x.node_id.cmp(&y.node_id));
                    all.push(rows);
                }
                Ok(all)
            })
            .await
            .unwrap();
        assert_eq!(fields(&loaded[0]), fields(&a));
        assert!(loaded[1].is_empty());
        assert_eq!(fields(&loaded[2]), fields(&c));
        let due = |now| store.due_delays(now);
        assert!(due(99).await.unwrap().is_empty());
        assert_eq!(
            due(100).await.unwrap(),
            vec![("t/c".to_string(), "wait".to_string())]
        );
        assert_eq!(
            due(1_000).await.unwrap(),
            vec![
                ("t/c".to_string(), "wait".to_string()),
                ("t/a".to_string(), "wait".to_string())
            ]
        );
    }
}
