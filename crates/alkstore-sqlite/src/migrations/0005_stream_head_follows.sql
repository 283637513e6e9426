-- 0005: an event written with an offset past its stream's head moves the head
-- there, in the same statement (ADR 0015). `publish` on alkstore's own
-- connection bumps the head first, so this never fires for it; a publish on
-- the application's connection (`publish(conn=)`) must be one statement, and
-- SQLite has no data-modifying CTEs, so there the head follows the event.
-- The head is what keeps offsets from being reused after `trim_to`.
CREATE TRIGGER IF NOT EXISTS __alkstore_stream_head_follows
AFTER INSERT ON __alkstore_stream_events
WHEN NEW.seq > coalesce((SELECT last_seq FROM __alkstore_stream_heads WHERE stream = NEW.stream), 0)
BEGIN
    INSERT OR REPLACE INTO __alkstore_stream_heads (stream, last_seq) VALUES (NEW.stream, NEW.seq);
END;
