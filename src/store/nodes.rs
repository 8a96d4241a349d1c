//! A run's node states as stored: one JSON array in the run's row
//! (`runs.nodes`), read and written whole by the command that holds the run.

use super::rows::RunRow;
use crate::clock::Millis;
use crate::error::{EngineError, Result};
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

/// One element of `runs.nodes`: node id, status, visits, output (JSON text),
/// edges delivered (JSON text), timer, run status while suspended.
type NodeElement<T, S> = (
    T,
    NodeStatus,
    i64,
    Option<S>,
    S,
    Option<Millis>,
    Option<RunStatus>,
);

/// Node states from the run's `nodes` column.
pub(crate) fn parse_node_rows(text: &str) -> Result<Vec<NodeRow>> {
    let rows: Vec<NodeElement<NodeId, String>> =
        serde_json::from_str(text).map_err(|e| EngineError::Storage(format!("nodes of a run: {e}")))?;
    Ok(rows
        .into_iter()
        .map(
            |(node_id, status, visits, output, pending_in, due_at, waiting)| NodeRow {
                node_id,
                status,
                visits,
                output,
                pending_in,
                due_at,
                waiting,
            },
        )
        .collect())
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
    let elements: Vec<NodeElement<&NodeId, &str>> = rows
        .iter()
        .map(|r| {
            (
                &r.node_id,
                r.status,
                r.visits,
                r.output.as_deref(),
                r.pending_in.as_str(),
                r.due_at,
                r.waiting,
            )
        })
        .collect();
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
        }
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
