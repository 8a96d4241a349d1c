-- A run's node states move into the run's row (issue #17). Every command
-- rewrites the run's row anyway; the node states had a B-tree of their own,
-- so each create and resolve changed one more page (≈ 1.26 of the ≈ 7 a
-- resolve wrote in a 20,000-run store, docs/performance.md).
--
-- `nodes` is the JSON array the writer loads and writes whole, one element
-- per node: [node_id, status, visits, output (JSON text), pending_in (JSON
-- text), due_at, waiting] (store::rows::node_document). `delay_due_at` is
-- the earliest timer of the run's waiting `core.delay` nodes, for the delay
-- sweep; a partial index holds only the runs that have one.
ALTER TABLE runs ADD COLUMN nodes TEXT NOT NULL DEFAULT '[]';
ALTER TABLE runs ADD COLUMN delay_due_at INTEGER;
UPDATE runs SET
    nodes = (SELECT json_group_array(json_array(node_id, status, visits, output, pending_in, due_at, waiting))
             FROM node_states n WHERE n.run_id = runs.run_id),
    delay_due_at = (SELECT MIN(due_at) FROM node_states n
                    WHERE n.run_id = runs.run_id AND n.status = 'waiting' AND n.due_at IS NOT NULL)
WHERE run_id IN (SELECT run_id FROM node_states);
DROP TABLE node_states;
CREATE INDEX runs_delay_due ON runs (delay_due_at) WHERE delay_due_at IS NOT NULL;
