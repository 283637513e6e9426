-- 0009: cron schedules with time zones (SPEC §23, ADR 0027). A schedule keeps
-- the zone its cron spec is read in, and the key core derives from its spec
-- and zone: re-registering an equal key keeps the next fire (an @every key is
-- its interval, as the interval comparison did before).
ALTER TABLE __SCHEMA__.schedules ADD COLUMN tz TEXT NOT NULL DEFAULT 'UTC';
ALTER TABLE __SCHEMA__.schedules ADD COLUMN spec_key TEXT NOT NULL DEFAULT '';
UPDATE __SCHEMA__.schedules SET spec_key = 'every:' || interval_s;
