-- A run's node states move into the run's row: see migrations/0022_run_nodes.sql.
ALTER TABLE runs ADD COLUMN nodes TEXT COLLATE "C" NOT NULL DEFAULT '[]';
ALTER TABLE runs ADD COLUMN delay_due_at BIGINT;
UPDATE runs SET nodes = n.nodes, delay_due_at = n.due
FROM (SELECT run_id,
             json_agg(json_build_array(node_id, status, visits, output, pending_in, due_at, waiting))::text AS nodes,
             MIN(due_at) FILTER (WHERE status = 'waiting') AS due
      FROM node_states GROUP BY run_id) n
WHERE runs.run_id = n.run_id;
DROP TABLE node_states;
CREATE INDEX runs_delay_due ON runs (delay_due_at) WHERE delay_due_at IS NOT NULL;
