-- Open conversations (`conversation.start` raised, not yet closed): a
-- conversationId is unique in its tenant while it is open (interrupt.md).
-- A row goes away when its conversation closes or its run ends.
CREATE TABLE conversations (
    tenant          TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    run_id          TEXT NOT NULL,
    turns           INTEGER NOT NULL DEFAULT 0,
    opened_at       INTEGER NOT NULL,
    PRIMARY KEY (tenant, conversation_id)
);
CREATE INDEX conversations_run ON conversations (run_id);
