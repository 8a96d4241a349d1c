-- See migrations/0031_interrupts_one_unique_index.sql: `interrupts_latest`
-- becomes unique and the constraint it repeats goes.
ALTER TABLE interrupts DROP CONSTRAINT interrupts_run_id_key_key;
DROP INDEX interrupts_latest;
CREATE UNIQUE INDEX interrupts_latest ON interrupts (run_id, node_id, visit);
