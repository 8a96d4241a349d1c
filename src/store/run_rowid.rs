//! Where a run's row lives in SQLite's `runs` table: at a rowid its id
//! names, so a command reads and updates the row straight from the table
//! instead of searching the id index first (issue #17: in a large store
//! that index's leaf is rarely cached, one page read through the kernel per
//! resolve; docs/performance.md, twenty-fifth sitting).
//!
//! A run id the engine makes ends in a UUIDv7 (`ids::new_tenant_bound`):
//! its first 48 bits are the creation time in milliseconds, its last bits
//! random. The rowid is that time followed by the last 15 bits, so rows are
//! still appended in creation order (the table's newest leaf takes every
//! insert) and two runs of one millisecond share a rowid once in 32,768
//! pairs. A row whose rowid was taken (such a pair, a row put there by hand)
//! gets the next free one instead (`NULL` on insert); a row stored before
//! this layout sits at a small rowid. Either way the id names a rowid where
//! the row is not, and the row is found by searching the id index, as every
//! row was before: the rowid is a hint that is checked (the id is compared
//! on the row), never trusted. PostgreSQL has no rowid; none of this applies
//! there.

/// The rowid `run_id` names, if it ends in a UUIDv7 (32 lowercase hex digits
/// after the last `/`, version 7); `None` for any other id.
pub(crate) fn of(run_id: &str) -> Option<i64> {
    let hex = run_id.rsplit('/').next()?;
    if hex.len() != 32 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    let uuid = u128::from_str_radix(hex, 16).ok()?;
    if (uuid >> 76) & 0xf != 7 {
        return None;
    }
    let millis = (uuid >> 80) as u64;
    let random = (uuid & 0x7fff) as u64;
    // 48 bits of time and 15 of chance: below 2^63, so a positive rowid.
    i64::try_from(millis << 15 | random).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_engine_run_id_names_its_creation_time_and_last_bits() {
        let uuid = "0193a5b2c3d47e5f8a9b0c1d2e3f4a5b";
        let rowid = of(&format!("acme/{uuid}")).expect("a UUIDv7");
        assert_eq!(rowid >> 15, 0x0193a5b2c3d4, "the time in milliseconds");
        assert_eq!(rowid & 0x7fff, 0x4a5b & 0x7fff, "the last 15 bits");
        // The id alone decides: a tenant's name does not move it.
        assert_eq!(of(&format!("acmf/{uuid}")), Some(rowid));
        assert_eq!(of(uuid), Some(rowid));
    }

    #[test]
    fn fresh_ids_name_increasing_rowids_across_milliseconds() {
        let first = of(&crate::ids::new_tenant_bound("t")).expect("a UUIDv7");
        std::thread::sleep(std::time::Duration::from_millis(2));
        let later = of(&crate::ids::new_tenant_bound("t")).expect("a UUIDv7");
        assert!(later > first, "{later} after {first}");
        assert!(first > 0);
    }

    #[test]
    fn other_ids_name_no_rowid() {
        for id in [
            "t/a",
            "",
            "t/",
            // version 4, not 7
            "t/0193a5b2c3d44e5f8a9b0c1d2e3f4a5b",
            // upper case, 31 and 33 digits, a hyphenated form
            "t/0193A5B2C3D47E5F8A9B0C1D2E3F4A5B",
            "t/0193a5b2c3d47e5f8a9b0c1d2e3f4a5",
            "t/0193a5b2c3d47e5f8a9b0c1d2e3f4a5bb",
            "t/0193a5b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
            "t/+193a5b2c3d47e5f8a9b0c1d2e3f4a5b",
        ] {
            assert_eq!(of(id), None, "{id}");
        }
    }

    #[test]
    fn the_latest_time_a_uuid_holds_still_names_a_positive_rowid() {
        assert_eq!(of("t/ffffffffffff7fffbfffffffffffffff"), Some(i64::MAX));
    }

    /// Against a real SQLite file: where rows land, and that a command finds
    /// and changes its own run's row whether or not it sits where its id says.
    mod stored {
        use super::super::of;
        use crate::args;
        use crate::store::changes::{self, Change};
        use crate::store::nodes::NodeDocument;
        use crate::store::rows::{load_run_for_update, RunRow};
        use crate::store::testing::{accept_gate, approval_engine, start_approval_run};
        use crate::store::{Durability, Store};
        use tollgate_wire::{RunId, RunStatus};

        fn url(dir: &tempfile::TempDir) -> String {
            format!("sqlite://{}", dir.path().join("runs.db").display())
        }

        async fn store(dir: &tempfile::TempDir) -> Store {
            Store::open(&url(dir), Durability::Full).await.unwrap()
        }

        async fn rowid(store: &Store, run: &str) -> Option<i64> {
            let run = run.to_string();
            store
                .write(move |c| {
                    c.query_scalar("SELECT rowid FROM runs WHERE run_id = ?", args![run.as_str()])
                })
                .await
                .unwrap()
        }

        #[tokio::test]
        async fn an_engine_run_is_stored_loaded_and_resolved_at_the_rowid_its_id_names() {
            let dir = tempfile::tempdir().unwrap();
            let (engine, actor) = approval_engine(&url(&dir)).await;
            let mut runs = Vec::new();
            for _ in 0..3 {
                runs.push(start_approval_run(&engine, &actor).await);
            }
            let store = store(&dir).await;
            for run in &runs {
                let named = of(run.as_str()).expect("an engine id names a rowid");
                assert_eq!(rowid(&store, run.as_str()).await, Some(named));
                let id = run.to_string();
                let loaded = store.write(move |c| load_run_for_update(c, &id)).await.unwrap();
                assert_eq!(loaded.and_then(|r| r.row_id), Some(named));
            }
            accept_gate(&engine, &actor, &runs[1]).await;
            let statuses: Vec<_> = statuses_of(&store, &runs).await;
            assert_eq!(
                statuses,
                [
                    RunStatus::WaitingApproval,
                    RunStatus::Completed,
                    RunStatus::WaitingApproval
                ]
            );
        }

        async fn statuses_of(store: &Store, runs: &[RunId]) -> Vec<RunStatus> {
            let mut out = Vec::new();
            for run in runs {
                out.push(store.run(run.as_str()).await.unwrap().expect("stored").status);
            }
            out
        }

        /// Another tenant's run squats at the rowid a run's id names (a
        /// store whose rows were renumbered, or put there by hand): the
        /// command neither reads nor changes it, and finds its own run by
        /// searching the id index.
        #[tokio::test]
        async fn a_run_stored_away_from_its_named_rowid_is_found_by_its_id_and_nothing_else_changes() {
            let dir = tempfile::tempdir().unwrap();
            let (engine, actor) = approval_engine(&url(&dir)).await;
            let run = start_approval_run(&engine, &actor).await;
            let store = store(&dir).await;
            let named = of(run.as_str()).unwrap();
            let id = run.to_string();
            store
                .write(move |c| {
                    c.execute("UPDATE runs SET rowid = rowid + 1 WHERE run_id = ?", args![id.as_str()])?;
                    c.execute(
                        "INSERT INTO runs (rowid, run_id, tenant, workflow_id, workflow_digest, status, owner, inputs, next_sequence, created_at) \
                         VALUES (?, 'u/squatter', 'u', 'w', 'd', 'waiting-approval', '{}', '{}', 1, 0)",
                        args![named],
                    )?;
                    Ok(())
                })
                .await
                .unwrap();
            let id = run.to_string();
            let loaded = store
                .write(move |c| load_run_for_update(c, &id))
                .await
                .unwrap()
                .unwrap();
            assert_eq!(loaded.run_id, run);
            assert_eq!(loaded.row_id, Some(named + 1), "the row it found, by searching");
            accept_gate(&engine, &actor, &run).await;
            assert_eq!(
                store.run(run.as_str()).await.unwrap().unwrap().status,
                RunStatus::Completed
            );
            let squatter = store.run("u/squatter").await.unwrap().unwrap();
            assert_eq!(
                (squatter.status, squatter.next_sequence),
                (RunStatus::WaitingApproval, 1)
            );
            assert_eq!(rowid(&store, "u/squatter").await, Some(named));
        }

        /// A new run whose named rowid is taken gets the next free one,
        /// never an error (the create must not fail on a coincidence), and
        /// its updates reach it there.
        #[tokio::test]
        async fn a_new_run_whose_named_rowid_is_taken_is_stored_at_another() {
            let dir = tempfile::tempdir().unwrap();
            let store = store(&dir).await;
            let first = "t/0193a5b2c3d47e5f8a9b0c1d2e3f4a5b";
            // Same millisecond, same last 15 bits, another id.
            let second = "t/0193a5b2c3d47aaa8bbb0c1d2e3fca5b";
            assert_eq!(of(first), of(second));
            let new_run = |id: &str| Change::NewRun {
                run: Box::new(RunRow::sample(id)),
                nodes: NodeDocument {
                    json: "[]".into(),
                    delay_due_at: None,
                },
            };
            let batch = vec![new_run(first), new_run(second)];
            store.write(move |c| changes::apply(c, batch)).await.unwrap();
            let named = of(first).unwrap();
            assert_eq!(rowid(&store, first).await, Some(named));
            let elsewhere = rowid(&store, second).await.expect("stored");
            assert_ne!(elsewhere, named);
            let loaded = store
                .write(move |c| load_run_for_update(c, second))
                .await
                .unwrap()
                .unwrap();
            assert_eq!(loaded.row_id, Some(elsewhere));
            let update = Change::Run {
                run_id: RunId::trusted(second),
                row_id: loaded.row_id,
                status: RunStatus::Completed,
                current_node_id: None,
                error: None,
                next_sequence: 7,
                completed_at: Some(9),
                nodes: None,
            };
            store
                .write(move |c| changes::apply(c, vec![update]))
                .await
                .unwrap();
            let (a, b) = (
                store.run(first).await.unwrap().unwrap(),
                store.run(second).await.unwrap().unwrap(),
            );
            assert_eq!((a.status, a.next_sequence), (RunStatus::Running, 1));
            assert_eq!(
                (b.status, b.next_sequence, b.completed_at),
                (RunStatus::Completed, 7, Some(9))
            );
        }
    }
}
