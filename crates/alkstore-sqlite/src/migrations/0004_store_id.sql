-- 0004: every store has an identity (ADR 0015): a random id in the meta table,
-- so a statement run on the application's own connection can check that the
-- connection reaches this store and not another file with alkstore's tables.
INSERT OR IGNORE INTO __alkstore_meta (key, value) VALUES ('store_id', lower(hex(randomblob(16))));
