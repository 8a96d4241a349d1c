-- A person's own pending requests counted with the groups' counts: see
-- migrations/0024_owner_counts.sql.
CREATE TABLE inbox_counts_kept (
    per_owner     BIGINT NOT NULL,
    owner_subject TEXT COLLATE "C" NOT NULL,
    group_key     TEXT COLLATE "C" NOT NULL,
    shard         BIGINT NOT NULL,
    pending       BIGINT NOT NULL,
    PRIMARY KEY (per_owner, owner_subject, group_key, shard)
);
INSERT INTO inbox_counts_kept (per_owner, owner_subject, group_key, shard, pending)
    SELECT 0, '', group_key, shard, pending FROM inbox_counts;
INSERT INTO inbox_counts_kept (per_owner, owner_subject, group_key, shard, pending)
    SELECT 1, owner_subject, inbox_group, 0, COUNT(*) FROM interrupts
    WHERE status = 'pending' AND inbox_group IS NOT NULL
    GROUP BY owner_subject, inbox_group;
DROP TABLE inbox_counts;
ALTER TABLE inbox_counts_kept RENAME TO inbox_counts;
DROP INDEX interrupts_mine;
