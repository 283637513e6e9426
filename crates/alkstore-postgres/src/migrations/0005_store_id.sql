-- 0005: every store has an identity (ADR 0015): a random id in the meta table,
-- so a statement run on the application's own connection can check that the
-- connection reaches this store and not another database or schema.
INSERT INTO __SCHEMA__.meta (key, value) VALUES ('store_id', replace(gen_random_uuid()::text, '-', ''))
ON CONFLICT (key) DO NOTHING;
