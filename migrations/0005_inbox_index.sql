-- The console inbox (Engine::pending_for) reads only pending interrupts and
-- only these columns. A covering partial index keeps it off the table rows,
-- whose payload and contract JSON come first and span overflow pages; the
-- inbox queries name it with INDEXED BY. Only pending rows are in it.
CREATE INDEX interrupts_inbox ON interrupts
    (created_at, status, run_id, kind, workflow_id, owner_subject, eligibility, deadline_at, interrupt_id, node_id, title)
    WHERE status = 'pending';
