\set r random(1, 8)
BEGIN;
WITH repo_lock AS (SELECT pg_advisory_xact_lock_shared(1347898446, hashtext('r' || :r))) INSERT INTO lockbench.objects SELECT 'r' || :r, o.* FROM repo_lock, UNNEST(ARRAY[decode(md5(random()::text), 'hex')], ARRAY[1::smallint], ARRAY[decode(repeat('ab', 200), 'hex')]) AS o ON CONFLICT DO NOTHING;
UPDATE lockbench.refs SET n = n + 1 WHERE repo = 'r' || :r AND name = 'main';
COMMIT;
