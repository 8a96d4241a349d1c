-- The inbox's covering index no longer carries each interrupt's approval
-- rules (issue #17). They are the same for every interrupt of a rule group,
-- and the inbox page takes them from the group it admitted the row by
-- (`inbox_groups`); in the index they were ≈ 270 bytes of an entry's ≈ 570
-- for a plain approval gate, and more with long approver lists, written on
-- every create and read past on every resolve's delete.
DROP INDEX interrupts_inbox;
CREATE INDEX interrupts_inbox ON interrupts
    (created_at, status, run_id, inbox_group, owner_subject, kind, workflow_id, deadline_at, interrupt_id, node_id, title)
    WHERE status = 'pending';
