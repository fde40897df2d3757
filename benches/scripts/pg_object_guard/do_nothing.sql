\set r random(1, 8)
BEGIN;
INSERT INTO lockbench.objects SELECT 'r' || :r, o.* FROM UNNEST(ARRAY[decode(md5(random()::text), 'hex')], ARRAY[1::smallint], ARRAY[decode(repeat('ab', 200), 'hex')]) AS o ON CONFLICT DO NOTHING;
UPDATE lockbench.refs SET n = n + 1 WHERE repo = 'r' || :r AND name = 'main';
COMMIT;
