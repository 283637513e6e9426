-- 0013: reserved. Another change in flight takes this number (the
-- coordinator renumbers when both land); empty here because the migration
-- list must run 1..N with no gap.
SELECT 1;
