-- A person's own pending requests are counted with the groups' counts
-- instead of read from an index of their own (issue #17). The index
-- `interrupts_mine` held every pending interrupt, and a resolve removed an
-- entry at a random place in it: ≈ 0.87 of the ≈ 6 pages a resolve wrote
-- in a 20,000-run store (docs/performance.md). The counts' rows are few
-- and written by every command anyway.
--
-- `inbox_counts` now holds two kinds of row, both kept by the command that
-- raises or closes an interrupt, one row per `shard` as before:
--   per_owner = 0, owner_subject = '': every pending interrupt of the group;
--   per_owner = 1, owner_subject = S: those of the group whose request is S's
--   (`interrupts.owner_subject`, which may itself be '').
-- Keyed by kind and person first, so that a person's own counts are one range.
CREATE TABLE inbox_counts_kept (
    per_owner     INTEGER NOT NULL,
    owner_subject TEXT NOT NULL,
    group_key     TEXT NOT NULL,
    shard         INTEGER NOT NULL,
    pending       INTEGER NOT NULL,
    PRIMARY KEY (per_owner, owner_subject, group_key, shard)
) WITHOUT ROWID;
INSERT INTO inbox_counts_kept (per_owner, owner_subject, group_key, shard, pending)
    SELECT 0, '', group_key, shard, pending FROM inbox_counts;
INSERT INTO inbox_counts_kept (per_owner, owner_subject, group_key, shard, pending)
    SELECT 1, owner_subject, inbox_group, 0, COUNT(*) FROM interrupts
    WHERE status = 'pending' AND inbox_group IS NOT NULL
    GROUP BY owner_subject, inbox_group;
DROP TABLE inbox_counts;
ALTER TABLE inbox_counts_kept RENAME TO inbox_counts;
DROP INDEX interrupts_mine;
