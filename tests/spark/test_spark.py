"""Spark SQL with Iceberg's Java REST client against the real server.

Every test works on tables of its own in the shared namespace `lake.db` (see conftest.py).
"""

import datetime
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.types import StringType


def inside_warehouse(server, name):
    """A directory below the server's warehouse, for locations a test chooses."""
    path = Path(server.data_dir) / "data" / "warehouse" / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def rows(spark, sql):
    """The result of a query as a list of tuples."""
    return [tuple(row) for row in spark.sql(sql).collect()]


def scalar(spark, sql):
    return spark.sql(sql).collect()[0][0]


def snapshot_ids(spark, table):
    return [r[0] for r in rows(spark, f"SELECT snapshot_id FROM {table}.snapshots ORDER BY committed_at")]


def create_orders(spark, table, properties="", format_version=2):
    """A partitioned table with four rows."""
    extra = f", {properties}" if properties else ""
    spark.sql(f"""CREATE TABLE {table} (id BIGINT, item STRING, qty INT, ts TIMESTAMP)
            USING iceberg PARTITIONED BY (days(ts), bucket(4, id))
            TBLPROPERTIES ('format-version' = '{format_version}'{extra})""")
    spark.sql(f"""INSERT INTO {table} VALUES
            (1, 'apple', 3, TIMESTAMP '2026-11-01 10:00:00'),
            (2, 'pear', 5, TIMESTAMP '2026-11-01 11:00:00'),
            (3, 'fig', 7, TIMESTAMP '2026-11-02 09:00:00'),
            (4, 'plum', 1, TIMESTAMP '2026-11-03 08:00:00')""")


def test_namespaces(spark, server, namespace):
    # Client-chosen locations must be inside the warehouse: the server refuses others.
    tmp_path = inside_warehouse(server, "namespaces")
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.scratch")
    spark.sql("ALTER NAMESPACE lake.scratch SET PROPERTIES ('team' = 'spark')")
    namespaces = [r[0] for r in rows(spark, "SHOW NAMESPACES IN lake")]
    assert "db" in namespaces and "scratch" in namespaces
    described = dict((r[0], r[1]) for r in rows(spark, "DESCRIBE NAMESPACE EXTENDED lake.scratch"))
    assert "team" in described.get("Properties", "")
    spark.sql("DROP NAMESPACE lake.scratch")
    assert "scratch" not in [r[0] for r in rows(spark, "SHOW NAMESPACES IN lake")]
    # Nested namespaces, and one with a location that new tables go under. Spark stores it as
    # `file:/tmp/...` (Hadoop's form, no authority); tables under it are `file:///tmp/...`.
    spark.sql(f"CREATE NAMESPACE lake.outer_ns LOCATION '{tmp_path}/outer'")
    spark.sql("CREATE NAMESPACE lake.outer_ns.inner_ns")
    assert [r[0] for r in rows(spark, "SHOW NAMESPACES IN lake.outer_ns")] == ["outer_ns.inner_ns"]
    spark.sql("CREATE TABLE lake.outer_ns.inner_ns.t (id BIGINT) USING iceberg")
    spark.sql("INSERT INTO lake.outer_ns.inner_ns.t VALUES (1)")
    assert scalar(spark, "SELECT count(*) FROM lake.outer_ns.inner_ns.t") == 1
    spark.sql("CREATE TABLE lake.outer_ns.t (id BIGINT) USING iceberg")
    spark.sql("INSERT INTO lake.outer_ns.t VALUES (1)")
    location = dict((r[0], r[1]) for r in rows(spark, "DESCRIBE TABLE EXTENDED lake.outer_ns.t"))["Location"]
    assert location.startswith(f"file://{tmp_path}/outer/"), location
    spark.sql("DROP TABLE lake.outer_ns.inner_ns.t")
    spark.sql("DROP NAMESPACE lake.outer_ns.inner_ns")


def test_create_insert_select(spark, namespace, unique):
    table = f"{namespace}.{unique}"
    create_orders(spark, table)
    assert rows(spark, f"SELECT id, item FROM {table} ORDER BY id") == [
        (1, "apple"),
        (2, "pear"),
        (3, "fig"),
        (4, "plum"),
    ]
    assert scalar(spark, f"SELECT sum(qty) FROM {table} WHERE ts >= TIMESTAMP '2026-11-02 00:00:00'") == 8
    days = rows(spark, f"SELECT DISTINCT partition.ts_day FROM {table}.partitions ORDER BY 1")
    assert days == [(datetime.date(2026, 11, d),) for d in (1, 2, 3)]
    assert scalar(spark, f"SELECT sum(record_count) FROM {table}.partitions") == 4
    spark.sql(f"INSERT INTO {table} VALUES (5, 'kiwi', 2, TIMESTAMP '2026-11-03 09:00:00')")
    assert scalar(spark, f"SELECT count(*) FROM {table}") == 5
    assert len(snapshot_ids(spark, table)) == 2
    assert unique in [r[1] for r in rows(spark, f"SHOW TABLES IN {namespace}")]


def test_ctas_rtas_rename_drop(spark, namespace, unique):
    source = f"{namespace}.{unique}_src"
    create_orders(spark, source)
    ctas = f"{namespace}.{unique}_ctas"
    spark.sql(f"CREATE TABLE {ctas} USING iceberg PARTITIONED BY (item) AS SELECT id, item FROM {source}")
    assert scalar(spark, f"SELECT count(*) FROM {ctas}") == 4
    spark.sql(f"CREATE OR REPLACE TABLE {ctas} USING iceberg AS SELECT id, qty FROM {source} WHERE id > 2")
    assert rows(spark, f"SELECT * FROM {ctas} ORDER BY id") == [(3, 7), (4, 1)]
    # The replaced table keeps its history.
    assert len(snapshot_ids(spark, ctas)) == 2
    renamed = f"{namespace}.{unique}_renamed"
    # Spark passes the new name to the catalog as written: without the catalog's name.
    spark.sql(f"ALTER TABLE {ctas} RENAME TO {renamed.removeprefix('lake.')}")
    assert scalar(spark, f"SELECT count(*) FROM {renamed}") == 2
    tables = [r[1] for r in rows(spark, f"SHOW TABLES IN {namespace}")]
    assert f"{unique}_renamed" in tables and f"{unique}_ctas" not in tables
    spark.sql(f"DROP TABLE {renamed}")
    spark.sql(f"DROP TABLE {source} PURGE")
    tables = [r[1] for r in rows(spark, f"SHOW TABLES IN {namespace}")]
    assert f"{unique}_renamed" not in tables and f"{unique}_src" not in tables


def test_merge_into(spark, namespace, unique):
    table = f"{namespace}.{unique}"
    create_orders(spark, table)
    spark.createDataFrame(
        [(2, "pear", 50), (4, "plum", 0), (9, "lime", 9)], "id BIGINT, item STRING, qty INT"
    ).createOrReplaceTempView(f"{unique}_changes")
    spark.sql(f"""MERGE INTO {table} t USING {unique}_changes s ON t.id = s.id
            WHEN MATCHED AND s.qty = 0 THEN DELETE
            WHEN MATCHED THEN UPDATE SET t.qty = s.qty
            WHEN NOT MATCHED THEN INSERT (id, item, qty, ts)
                VALUES (s.id, s.item, s.qty, TIMESTAMP '2026-11-04 00:00:00')""")
    assert rows(spark, f"SELECT id, qty FROM {table} ORDER BY id") == [(1, 3), (2, 50), (3, 7), (9, 9)]


@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
def test_update_delete(spark, namespace, unique, mode):
    table = f"{namespace}.{unique}"
    modes = ", ".join(f"'write.{op}.mode' = '{mode}'" for op in ("delete", "update", "merge"))
    create_orders(spark, table, modes)
    spark.sql(f"DELETE FROM {table} WHERE id = 1")
    spark.sql(f"UPDATE {table} SET qty = qty * 10 WHERE item = 'fig'")
    spark.createDataFrame([(2, 99)], "id BIGINT, qty INT").createOrReplaceTempView(f"{unique}_m")
    spark.sql(
        f"MERGE INTO {table} t USING {unique}_m s ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.qty = s.qty"
    )
    assert rows(spark, f"SELECT id, qty FROM {table} ORDER BY id") == [(2, 99), (3, 70), (4, 1)]
    delete_files = scalar(spark, f"SELECT count(*) FROM {table}.delete_files")
    if mode == "merge-on-read":
        assert delete_files > 0
    else:
        assert delete_files == 0
    operations = [r[0] for r in rows(spark, f"SELECT operation FROM {table}.snapshots ORDER BY committed_at")]
    assert operations[0] == "append" and len(operations) == 4


def test_alter_table(spark, namespace, unique):
    table = f"{namespace}.{unique}"
    create_orders(spark, table)
    spark.sql(f"ALTER TABLE {table} ADD COLUMN note STRING COMMENT 'free text'")
    spark.sql(f"ALTER TABLE {table} RENAME COLUMN item TO product")
    spark.sql(f"ALTER TABLE {table} ALTER COLUMN qty TYPE BIGINT")
    spark.sql(
        f"ALTER TABLE {table} SET TBLPROPERTIES ('team' = 'sales', 'write.metadata.metrics.default' = 'full')"
    )
    spark.sql(f"ALTER TABLE {table} UNSET TBLPROPERTIES ('team')")
    spark.sql(f"ALTER TABLE {table} ADD PARTITION FIELD product")
    spark.sql(f"ALTER TABLE {table} DROP PARTITION FIELD bucket(4, id)")
    spark.sql(f"ALTER TABLE {table} WRITE ORDERED BY id")
    spark.sql(f"INSERT INTO {table} VALUES (5, 'kiwi', 2, TIMESTAMP '2026-11-05 09:00:00', 'new')")
    columns = [r[0] for r in rows(spark, f"DESCRIBE TABLE {table}")]
    assert columns[:5] == ["id", "product", "qty", "ts", "note"]
    assert rows(spark, f"SELECT id, product, note FROM {table} WHERE id IN (1, 5) ORDER BY id") == [
        (1, "apple", None),
        (5, "kiwi", "new"),
    ]
    properties = dict(rows(spark, f"SHOW TBLPROPERTIES {table}"))
    assert properties["write.metadata.metrics.default"] == "full"
    assert "team" not in properties
    # The new file is written with the newest spec: partitioned by day and product.
    newest = rows(spark, f"SELECT partition FROM {table}.files WHERE record_count = 1 AND spec_id > 0")
    assert len(newest) == 1
    assert scalar(spark, f"SELECT count(*) FROM {table}") == 5


def test_views(spark, namespace, unique):
    table = f"{namespace}.{unique}"
    create_orders(spark, table)
    view = f"{namespace}.{unique}_v"
    spark.sql(
        f"CREATE VIEW {view} (id, item) COMMENT 'big orders' AS SELECT id, item FROM {table} WHERE qty > 2"
    )
    assert rows(spark, f"SELECT * FROM {view} ORDER BY id") == [(1, "apple"), (2, "pear"), (3, "fig")]
    assert f"{unique}_v" in [r[1] for r in rows(spark, f"SHOW VIEWS IN {namespace}")]
    spark.sql(f"CREATE OR REPLACE VIEW {view} AS SELECT id FROM {table} WHERE qty = 1")
    assert rows(spark, f"SELECT * FROM {view}") == [(4,)]
    spark.sql(f"ALTER VIEW {view} SET TBLPROPERTIES ('team' = 'sales')")
    spark.sql(f"DROP VIEW {view}")
    assert f"{unique}_v" not in [r[1] for r in rows(spark, f"SHOW VIEWS IN {namespace}")]


def test_iceberg_branches_and_tags(spark, namespace, unique):
    table = f"{namespace}.{unique}"
    create_orders(spark, table)
    first = snapshot_ids(spark, table)[0]
    spark.sql(f"ALTER TABLE {table} CREATE TAG v1")
    spark.sql(f"ALTER TABLE {table} CREATE BRANCH audit RETAIN 7 DAYS")
    spark.sql(f"INSERT INTO {table}.branch_audit VALUES (10, 'audit', 1, TIMESTAMP '2026-11-06 00:00:00')")
    spark.sql(f"INSERT INTO {table} VALUES (5, 'kiwi', 2, TIMESTAMP '2026-11-05 09:00:00')")
    assert scalar(spark, f"SELECT count(*) FROM {table}.branch_audit") == 5
    assert scalar(spark, f"SELECT count(*) FROM {table} VERSION AS OF 'audit'") == 5
    assert scalar(spark, f"SELECT max(id) FROM {table}.branch_audit") == 10
    assert scalar(spark, f"SELECT count(*) FROM {table}") == 5
    assert scalar(spark, f"SELECT max(id) FROM {table}") == 5
    assert scalar(spark, f"SELECT count(*) FROM {table} VERSION AS OF 'v1'") == 4
    assert scalar(spark, f"SELECT count(*) FROM {table}.tag_v1") == 4
    assert scalar(spark, f"SELECT count(*) FROM {table} VERSION AS OF {first}") == 4
    refs = dict(rows(spark, f"SELECT name, type FROM {table}.refs"))
    assert refs == {"main": "BRANCH", "audit": "BRANCH", "v1": "TAG"}
    # Move the tag, then drop both refs.
    spark.sql(f"ALTER TABLE {table} REPLACE TAG v1 AS OF VERSION {snapshot_ids(spark, table)[-1]}")
    assert scalar(spark, f"SELECT count(*) FROM {table} VERSION AS OF 'v1'") == 5
    spark.sql(f"ALTER TABLE {table} DROP TAG v1")
    spark.sql(f"ALTER TABLE {table} DROP BRANCH audit")
    assert dict(rows(spark, f"SELECT name, type FROM {table}.refs")) == {"main": "BRANCH"}


def test_time_travel_by_timestamp(spark, namespace, unique):
    table = f"{namespace}.{unique}"
    create_orders(spark, table)
    committed = scalar(spark, f"SELECT max(committed_at) FROM {table}.snapshots")
    spark.sql(f"INSERT INTO {table} VALUES (5, 'kiwi', 2, TIMESTAMP '2026-11-05 09:00:00')")
    at = committed.strftime("%Y-%m-%d %H:%M:%S.%f")
    assert scalar(spark, f"SELECT count(*) FROM {table} TIMESTAMP AS OF '{at}'") == 4
    assert scalar(spark, f"SELECT count(*) FROM {table}") == 5


def test_rollback_and_cherrypick(spark, namespace, unique):
    table = f"{namespace}.{unique}"
    create_orders(spark, table)
    spark.sql(f"INSERT INTO {table} VALUES (5, 'kiwi', 2, TIMESTAMP '2026-11-05 09:00:00')")
    first, second = snapshot_ids(spark, table)
    spark.sql(f"CALL lake.system.rollback_to_snapshot('{table.removeprefix('lake.')}', {first})")
    assert scalar(spark, f"SELECT count(*) FROM {table}") == 4
    spark.sql(
        f"CALL lake.system.set_current_snapshot(table => '{table.removeprefix('lake.')}', "
        f"snapshot_id => {second})"
    )
    assert scalar(spark, f"SELECT count(*) FROM {table}") == 5
    spark.sql(f"CALL lake.system.rollback_to_snapshot('{table.removeprefix('lake.')}', {first})")
    spark.sql(f"CALL lake.system.cherrypick_snapshot('{table.removeprefix('lake.')}', {second})")
    assert scalar(spark, f"SELECT count(*) FROM {table}") == 5
    # Every move of main is in the snapshot log; cherry-picking a child of the current
    # snapshot fast-forwards to it.
    history = [r[0] for r in rows(spark, f"SELECT snapshot_id FROM {table}.history ORDER BY made_current_at")]
    assert history == [first, second, first, second, first, second]


def test_expire_snapshots(spark, namespace, unique):
    table = f"{namespace}.{unique}"
    name = table.removeprefix("lake.")
    create_orders(spark, table)
    for i in range(3):
        spark.sql(f"INSERT OVERWRITE {table} SELECT * FROM {table}")
    assert len(snapshot_ids(spark, table)) == 4
    now = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=1)
    result = spark.sql(f"""CALL lake.system.expire_snapshots(table => '{name}',
            older_than => TIMESTAMP '{now:%Y-%m-%d %H:%M:%S}', retain_last => 1)""").collect()[0]
    assert result["deleted_data_files_count"] > 0
    assert len(snapshot_ids(spark, table)) == 1
    assert scalar(spark, f"SELECT count(*) FROM {table}") == 4


def test_maintenance_procedures(spark, namespace, unique):
    table = f"{namespace}.{unique}"
    name = table.removeprefix("lake.")
    create_orders(spark, table)
    spark.sql(f"INSERT INTO {table} VALUES (5, 'kiwi', 2, TIMESTAMP '2026-11-01 12:00:00')")
    rewritten = spark.sql(
        f"CALL lake.system.rewrite_data_files(table => '{name}', options => map('rewrite-all', 'true'))"
    ).collect()[0]
    assert rewritten["rewritten_data_files_count"] >= 2
    spark.sql(f"CALL lake.system.rewrite_manifests('{name}')")
    assert scalar(spark, f"SELECT count(*) FROM {table}") == 5
    operations = [r[0] for r in rows(spark, f"SELECT operation FROM {table}.snapshots ORDER BY committed_at")]
    assert operations[-2:] == ["replace", "replace"]


def test_pangolin_branch_workflow(spark, server, api, namespace, unique):
    table = f"{namespace}.{unique}"
    create_orders(spark, table)
    api("POST", "refs", {"name": "dev"})
    # Through the catalog whose warehouse is `default@dev`, and through `t@dev` on `lake`.
    spark.sql(f"INSERT INTO lake_dev.db.{unique} VALUES (5, 'kiwi', 2, TIMESTAMP '2026-11-05 09:00:00')")
    spark.sql(f"INSERT INTO lake.db.`{unique}@dev` VALUES (6, 'lime', 4, TIMESTAMP '2026-11-06 09:00:00')")
    spark.sql(f"UPDATE lake_dev.db.{unique} SET qty = 0 WHERE id = 1")
    spark.sql(f"REFRESH TABLE lake_dev.db.{unique}")
    assert scalar(spark, f"SELECT count(*) FROM lake_dev.db.{unique}") == 6
    assert scalar(spark, f"SELECT count(*) FROM lake.db.`{unique}@dev`") == 6
    # A table created on dev is invisible on main until the merge.
    spark.sql(
        f"CREATE TABLE lake_dev.db.{unique}_new USING iceberg AS SELECT id, item FROM lake_dev.db.{unique}"
    )
    # main is unchanged.
    spark.sql(f"REFRESH TABLE {table}")
    assert scalar(spark, f"SELECT count(*) FROM {table}") == 4
    assert scalar(spark, f"SELECT qty FROM {table} WHERE id = 1") == 3
    assert f"{unique}_new" not in [r[1] for r in rows(spark, f"SHOW TABLES IN {namespace}")]

    merged = api("POST", "merge", {"source": "dev"})
    assert merged["target-head"]

    spark.sql(f"REFRESH TABLE {table}")
    assert scalar(spark, f"SELECT count(*) FROM {table}") == 6
    assert scalar(spark, f"SELECT qty FROM {table} WHERE id = 1") == 0
    assert scalar(spark, f"SELECT count(*) FROM {table}_new") == 6
    # Spark keeps writing on main after the merge.
    spark.sql(f"INSERT INTO {table} VALUES (7, 'date', 1, TIMESTAMP '2026-11-07 09:00:00')")
    assert scalar(spark, f"SELECT count(*) FROM {table}") == 7


def test_pangolin_tag_is_read_only(spark, api, spark_catalog_at, namespace, unique):
    table = f"{namespace}.{unique}"
    create_orders(spark, table)
    api("POST", "refs", {"name": f"{unique}_v1", "type": "tag"})
    spark.sql(f"INSERT INTO {table} VALUES (5, 'kiwi', 2, TIMESTAMP '2026-11-05 09:00:00')")
    at_tag = spark_catalog_at("lake_tag", f"default@{unique}_v1")
    assert scalar(spark, f"SELECT count(*) FROM {at_tag}.db.{unique}") == 4
    assert scalar(spark, f"SELECT count(*) FROM lake.db.`{unique}@{unique}_v1`") == 4
    assert scalar(spark, f"SELECT count(*) FROM {table}") == 5
    # A past commit of main, by first-parent steps and by hash, through `t@...` names.
    assert scalar(spark, f"SELECT count(*) FROM lake.db.`{unique}@main~1`") == 4
    before = api("GET", "refs/main~1")["hash"]
    assert scalar(spark, f"SELECT count(*) FROM lake.db.`{unique}@main#{before[:12]}`") == 4
    with pytest.raises(Exception, match="read-only"):
        spark.sql(
            f"INSERT INTO lake.db.`{unique}@main~1` VALUES (6, 'x', 1, TIMESTAMP '2026-11-06 09:00:00')"
        )
    with pytest.raises(Exception) as refused:
        spark.sql(f"INSERT INTO {at_tag}.db.{unique} VALUES (6, 'x', 1, TIMESTAMP '2026-11-06 09:00:00')")
    assert "read-only" in str(refused.value)


def test_spark_writes_pyiceberg_reads(spark, pyiceberg, namespace, unique):
    table = f"{namespace}.{unique}"
    create_orders(spark, table)
    spark.sql(f"DELETE FROM {table} WHERE id = 2")
    loaded = pyiceberg.load_table(f"db.{unique}")
    data = loaded.scan().to_arrow().sort_by("id")
    assert data["id"].to_pylist() == [1, 3, 4]
    assert data["item"].to_pylist() == ["apple", "fig", "plum"]
    assert loaded.spec().fields[0].transform.__class__.__name__ == "DayTransform"
    filtered = loaded.scan(row_filter="qty >= 3").to_arrow()
    assert sorted(filtered["id"].to_pylist()) == [1, 3]


def test_spark_merge_on_read_pyiceberg_reads(spark, pyiceberg, namespace, unique):
    table = f"{namespace}.{unique}"
    create_orders(spark, table, "'write.delete.mode' = 'merge-on-read'")
    spark.sql(f"DELETE FROM {table} WHERE id = 2")
    assert scalar(spark, f"SELECT count(*) FROM {table}.delete_files") == 1
    data = pyiceberg.load_table(f"db.{unique}").scan().to_arrow()
    assert sorted(data["id"].to_pylist()) == [1, 3, 4]


def test_pyiceberg_writes_spark_reads(spark, pyiceberg, namespace, unique):
    table = f"{namespace}.{unique}"
    spark.sql(f"CREATE TABLE {table} (id BIGINT, item STRING) USING iceberg PARTITIONED BY (item)")
    spark.sql(f"INSERT INTO {table} VALUES (1, 'apple')")
    loaded = pyiceberg.load_table(f"db.{unique}")
    loaded.append(pa.table({"id": pa.array([2, 3], pa.int64()), "item": ["pear", "fig"]}))
    spark.sql(f"REFRESH TABLE {table}")
    assert rows(spark, f"SELECT * FROM {table} ORDER BY id") == [(1, "apple"), (2, "pear"), (3, "fig")]
    # Spark writes again on top of PyIceberg's snapshot.
    spark.sql(f"INSERT INTO {table} VALUES (4, 'plum')")
    assert len(pyiceberg.load_table(f"db.{unique}").scan().to_arrow()) == 4

    # A table PyIceberg creates, evolves and fills, read by Spark.
    created = pyiceberg.create_table(
        f"db.{unique}_py",
        pa.schema([("id", pa.int64()), ("at", pa.timestamp("us", tz="UTC"))]),
    )
    with created.update_schema() as update:
        update.add_column("note", StringType())
    created.append(
        pa.table(
            {
                "id": pa.array([1, 2], pa.int64()),
                "at": pa.array(
                    [datetime.datetime(2026, 11, 1, tzinfo=datetime.timezone.utc)] * 2,
                    pa.timestamp("us", tz="UTC"),
                ),
                "note": ["a", None],
            }
        )
    )
    assert rows(spark, f"SELECT id, note FROM {table}_py ORDER BY id") == [(1, "a"), (2, None)]


def test_format_version_3(spark, pyiceberg, namespace, unique):
    """Row lineage (the server assigns `first-row-id` and advances `next-row-id`) and deletion
    vectors."""
    table = f"{namespace}.{unique}"
    create_orders(spark, table, "'write.delete.mode' = 'merge-on-read'")
    spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('format-version' = '3')")
    spark.sql(f"INSERT INTO {table} VALUES (5, 'kiwi', 2, TIMESTAMP '2026-11-05 09:00:00')")
    spark.sql(f"DELETE FROM {table} WHERE id = 2")
    assert rows(spark, f"SELECT id FROM {table} ORDER BY id") == [(1,), (3,), (4,), (5,)]
    metadata = pyiceberg.load_table(f"db.{unique}").metadata
    assert metadata.format_version == 3
    # The first snapshot after the upgrade gives ids to the 4 older rows and its 1 new row; the
    # delete (a deletion vector) adds none.
    lineage = [
        (s.first_row_id, s.added_rows) for s in sorted(metadata.snapshots, key=lambda s: s.sequence_number)
    ]
    assert lineage == [(None, None), (0, 5), (5, 0)]
    assert metadata.next_row_id == 5
    v3 = f"{namespace}.{unique}_v3"
    spark.sql(
        f"CREATE TABLE {v3} (id BIGINT, item STRING) USING iceberg "
        "TBLPROPERTIES ('format-version' = '3', 'write.delete.mode' = 'merge-on-read')"
    )
    spark.sql(f"INSERT INTO {v3} VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    spark.sql(f"INSERT INTO {v3} VALUES (4, 'd')")
    spark.sql(f"DELETE FROM {v3} WHERE id = 2")
    assert rows(spark, f"SELECT id FROM {v3} ORDER BY id") == [(1,), (3,), (4,)]
    loaded = pyiceberg.load_table(f"db.{unique}_v3").metadata
    assert loaded.next_row_id == 4
    first_row_ids = [s.first_row_id for s in sorted(loaded.snapshots, key=lambda s: s.sequence_number)]
    assert first_row_ids[:2] == [0, 3]
    # Deletion vectors are Puffin files.
    formats = [r[0] for r in rows(spark, f"SELECT file_format FROM {v3}.delete_files")]
    assert formats == ["PUFFIN"]


def test_schema_evolution_more(spark, namespace, unique):
    table = f"{namespace}.{unique}"
    spark.sql(
        f"CREATE TABLE {table} (id BIGINT NOT NULL, item STRING, detail STRUCT<a: INT, b: STRING>) "
        "USING iceberg"
    )
    spark.sql(f"INSERT INTO {table} VALUES (1, 'apple', named_struct('a', 1, 'b', 'x'))")
    spark.sql(f"ALTER TABLE {table} SET IDENTIFIER FIELDS id")
    spark.sql(f"ALTER TABLE {table} ADD COLUMN detail.c DOUBLE")
    spark.sql(f"ALTER TABLE {table} DROP COLUMN item")
    spark.sql(f"ALTER TABLE {table} ADD COLUMN first_col INT FIRST")
    spark.sql(f"ALTER TABLE {table} ALTER COLUMN detail.a COMMENT 'the a'")
    spark.sql(f"INSERT INTO {table} VALUES (7, 2, named_struct('a', 2, 'b', 'y', 'c', 0.5))")
    assert rows(spark, f"SELECT first_col, id, detail.c FROM {table} ORDER BY id") == [
        (None, 1, None),
        (7, 2, 0.5),
    ]
    # The identifier field survives later schema changes.
    create = scalar(spark, f"SHOW CREATE TABLE {table}")
    assert "first_col" in create and "item" not in create


def test_write_audit_publish(spark, namespace, unique):
    """Staged snapshots (add-snapshot without a ref) and publishing them."""
    table = f"{namespace}.{unique}"
    name = table.removeprefix("lake.")
    create_orders(spark, table, "'write.wap.enabled' = 'true'")
    spark.conf.set("spark.wap.id", f"{unique}-1")
    try:
        spark.sql(f"INSERT INTO {table} VALUES (5, 'kiwi', 2, TIMESTAMP '2026-11-05 09:00:00')")
    finally:
        spark.conf.unset("spark.wap.id")
    assert scalar(spark, f"SELECT count(*) FROM {table}") == 4
    staged = rows(spark, f"SELECT snapshot_id FROM {table}.snapshots WHERE summary['wap.id'] = '{unique}-1'")
    assert len(staged) == 1
    spark.sql(f"CALL lake.system.publish_changes('{name}', '{unique}-1')")
    assert scalar(spark, f"SELECT count(*) FROM {table}") == 5
    # Writing to an Iceberg branch through spark.wap.branch, then fast-forwarding main to it.
    spark.sql(f"ALTER TABLE {table} CREATE BRANCH audit")
    spark.conf.set("spark.wap.branch", "audit")
    try:
        spark.sql(f"INSERT INTO {table} VALUES (6, 'lime', 4, TIMESTAMP '2026-11-06 09:00:00')")
        assert scalar(spark, f"SELECT count(*) FROM {table}") == 6  # reads follow the WAP branch
    finally:
        spark.conf.unset("spark.wap.branch")
    assert scalar(spark, f"SELECT count(*) FROM {table}") == 5
    spark.sql(f"CALL lake.system.fast_forward('{name}', 'main', 'audit')")
    assert scalar(spark, f"SELECT count(*) FROM {table}") == 6


def test_overwrite_and_metadata_deletes(spark, namespace, unique):
    table = f"{namespace}.{unique}"
    create_orders(spark, table)
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        spark.sql(f"INSERT OVERWRITE {table} SELECT id, item, qty * 2, ts FROM {table} WHERE id = 3")
    finally:
        spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
    assert rows(spark, f"SELECT id, qty FROM {table} ORDER BY id") == [(1, 3), (2, 5), (3, 14), (4, 1)]
    # A delete of whole partitions needs no rewrite.
    spark.sql(f"DELETE FROM {table} WHERE ts < TIMESTAMP '2026-11-02 00:00:00'")
    assert rows(spark, f"SELECT id FROM {table} ORDER BY id") == [(3,), (4,)]
    operations = [r[0] for r in rows(spark, f"SELECT operation FROM {table}.snapshots ORDER BY committed_at")]
    assert operations == ["append", "overwrite", "delete"]
    # Each commit wrote one metadata file, all listed in the metadata log.
    log = rows(spark, f"SELECT file FROM {table}.metadata_log_entries ORDER BY timestamp")
    assert len(log) == 4
    assert all("/metadata/" in f[0] and f[0].endswith(".metadata.json") for f in log)


def test_table_location_and_register(spark, server, namespace, unique):
    tmp_path = inside_warehouse(server, f"located-{unique}")
    table = f"{namespace}.{unique}"
    location = f"file://{tmp_path}/custom"
    spark.sql(f"CREATE TABLE {table} (id BIGINT) USING iceberg LOCATION '{location}'")
    spark.sql(f"INSERT INTO {table} VALUES (1), (2)")
    described = dict((r[0], r[1]) for r in rows(spark, f"DESCRIBE TABLE EXTENDED {table}"))
    assert described["Location"].rstrip("/") == location
    metadata_file = scalar(
        spark, f"SELECT file FROM {table}.metadata_log_entries ORDER BY timestamp DESC LIMIT 1"
    )
    assert metadata_file.startswith(location)
    # Register the same metadata under a second name, named as Hadoop names local files.
    hadoop_style = metadata_file.replace("file:///", "file:/")
    spark.sql(
        f"CALL lake.system.register_table(table => 'db.{unique}_reg', metadata_file => '{hadoop_style}')"
    )
    assert scalar(spark, f"SELECT count(*) FROM {namespace}.{unique}_reg") == 2
    # A new location: later metadata files and data files go there.
    spark.sql(f"ALTER TABLE {table} SET LOCATION '{tmp_path}/moved'")
    spark.sql(f"INSERT INTO {table} VALUES (3)")
    assert scalar(spark, f"SELECT count(*) FROM {table}") == 3
    newest = scalar(spark, f"SELECT file FROM {table}.metadata_log_entries ORDER BY timestamp DESC LIMIT 1")
    assert f"{tmp_path}/moved/metadata/" in newest, newest
    # Default locations are under the server's warehouse.
    spark.sql(f"CREATE TABLE {table}_default (id BIGINT) USING iceberg")
    default = dict((r[0], r[1]) for r in rows(spark, f"DESCRIBE TABLE EXTENDED {table}_default"))["Location"]
    assert default.startswith("file:") and server.data_dir in default


def test_statistics(spark, pyiceberg, namespace, unique):
    """`set-statistics` with a Puffin file written by Spark, and `set-partition-statistics`."""
    table = f"{namespace}.{unique}"
    name = table.removeprefix("lake.")
    create_orders(spark, table)
    result = spark.sql(
        f"CALL lake.system.compute_table_stats(table => '{name}', columns => array('id', 'item'))"
    ).collect()
    assert result[0]["statistics_file"].endswith(".stats")
    loaded = pyiceberg.load_table(f"db.{unique}").metadata
    assert len(loaded.statistics) == 1
    assert loaded.statistics[0].snapshot_id == loaded.current_snapshot_id
    partition_stats = spark.sql(f"CALL lake.system.compute_partition_stats(table => '{name}')").collect()
    assert partition_stats[0][0]
    loaded = pyiceberg.load_table(f"db.{unique}").metadata
    assert len(loaded.partition_statistics) == 1


def test_concurrent_writers(spark, namespace, unique):
    """Commits that lose a race get 409 and are retried by the client."""
    import concurrent.futures

    table = f"{namespace}.{unique}"
    spark.sql(
        f"CREATE TABLE {table} (id BIGINT, writer INT) USING iceberg "
        "TBLPROPERTIES ('commit.retry.num-retries' = '10')"
    )

    def write(writer):
        for i in range(3):
            spark.sql(f"INSERT INTO {table} VALUES ({writer * 100 + i}, {writer})")

    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        list(pool.map(write, range(3)))
    assert scalar(spark, f"SELECT count(*) FROM {table}") == 9
    assert len(snapshot_ids(spark, table)) == 9


def test_snapshot_loading_mode_refs(spark, spark_catalog_at, namespace, unique):
    """With `snapshot-loading-mode=refs` the client loads `snapshots=refs` and fetches every
    snapshot only when it needs an older one."""
    table = f"{namespace}.{unique}"
    create_orders(spark, table)
    first = snapshot_ids(spark, table)[0]
    spark.sql(f"INSERT INTO {table} VALUES (5, 'kiwi', 2, TIMESTAMP '2026-11-05 09:00:00')")
    spark.sql(f"INSERT INTO {table} VALUES (6, 'lime', 4, TIMESTAMP '2026-11-06 09:00:00')")
    catalog = spark_catalog_at("lake_refs", "default")
    spark.conf.set(f"spark.sql.catalog.{catalog}.snapshot-loading-mode", "refs")
    lazy = f"{catalog}.db.{unique}"
    assert scalar(spark, f"SELECT count(*) FROM {lazy}") == 6
    assert scalar(spark, f"SELECT count(*) FROM {lazy} VERSION AS OF {first}") == 4
    assert len(snapshot_ids(spark, lazy)) == 3
    spark.sql(f"INSERT INTO {lazy} VALUES (7, 'date', 1, TIMESTAMP '2026-11-07 09:00:00')")
    spark.sql(f"REFRESH TABLE {table}")
    assert len(snapshot_ids(spark, table)) == 4


def test_views_on_pangolin_branches(spark, api, namespace, unique):
    """A view created on a Pangolin branch reaches main with the merge."""
    table = f"{namespace}.{unique}"
    create_orders(spark, table)
    branch = f"{unique}_b"
    api("POST", "refs", {"name": branch})
    spark.sql(f"CREATE VIEW lake.db.`{unique}_v@{branch}` AS SELECT id FROM lake.db.{unique} WHERE qty > 4")
    views = [r[1] for r in rows(spark, f"SHOW VIEWS IN {namespace}")]
    assert f"{unique}_v" not in views
    api("POST", "merge", {"source": branch})
    assert rows(spark, f"SELECT * FROM {namespace}.{unique}_v ORDER BY id") == [(2,), (3,)]
    spark.sql(f"ALTER VIEW {namespace}.{unique}_v RENAME TO lake.db.{unique}_w")
    assert rows(spark, f"SELECT count(*) FROM {namespace}.{unique}_w") == [(2,)]


def test_format_version_1(spark, pyiceberg, namespace, unique):
    """Version 1 metadata, and its partition evolution (dropped fields become `void`)."""
    table = f"{namespace}.{unique}"
    create_orders(spark, table, format_version=1)
    spark.sql(f"ALTER TABLE {table} ADD PARTITION FIELD item")
    spark.sql(f"ALTER TABLE {table} DROP PARTITION FIELD bucket(4, id)")
    spark.sql(f"INSERT INTO {table} VALUES (5, 'kiwi', 2, TIMESTAMP '2026-11-05 09:00:00')")
    spark.sql(f"DELETE FROM {table} WHERE id = 1")
    spark.sql(f"ALTER TABLE {table} ADD COLUMN note STRING")
    assert rows(spark, f"SELECT id FROM {table} ORDER BY id") == [(2,), (3,), (4,), (5,)]
    metadata = pyiceberg.load_table(f"db.{unique}").metadata
    assert metadata.format_version == 1
    transforms = [str(f.transform) for f in metadata.spec().fields]
    assert transforms == ["day", "void", "identity"]
    assert len(pyiceberg.load_table(f"db.{unique}").scan().to_arrow()) == 4


def test_errors_reach_spark_as_the_right_exceptions(spark, namespace, unique):
    from pyspark.errors import AnalysisException

    table = f"{namespace}.{unique}"
    spark.sql(f"CREATE TABLE {table} (id BIGINT) USING iceberg")
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_ALREADY_EXISTS"):
        spark.sql(f"CREATE TABLE {table} (id BIGINT) USING iceberg")
    spark.sql(f"CREATE TABLE IF NOT EXISTS {table} (id BIGINT) USING iceberg")
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql(f"SELECT * FROM {table}_missing")
    # Iceberg's SparkCatalog passes this one on as the REST client raised it.
    with pytest.raises(Exception, match="NoSuchNamespaceException"):
        spark.sql(f"CREATE TABLE lake.no_such_ns.{unique} (id BIGINT) USING iceberg")
    spark.sql(f"DROP TABLE IF EXISTS {table}_missing")


def test_purge_deletes_the_files(spark, namespace, unique):
    import os
    import urllib.parse

    table = f"{namespace}.{unique}"
    create_orders(spark, table)
    location = dict((r[0], r[1]) for r in rows(spark, f"DESCRIBE TABLE EXTENDED {table}"))["Location"]
    path = urllib.parse.urlparse(location).path
    assert os.path.isdir(os.path.join(path, "metadata")) and os.path.isdir(os.path.join(path, "data"))
    spark.sql(f"INSERT INTO {table} VALUES (5, 'kiwi', 2, TIMESTAMP '2026-11-05 09:00:00')")
    spark.sql(f"DELETE FROM {table} WHERE id = 1")
    # Spark drops the table without purgeRequested, then deletes every file reachable from the
    # last metadata file, older metadata files through the metadata log: the server's log must
    # name every metadata file it wrote.
    spark.sql(f"DROP TABLE {table} PURGE")
    left = [os.path.join(d, f) for d, _, files in os.walk(path) for f in files if not f.endswith(".crc")]
    assert left == []


def test_pangolin_merge_conflict(spark, api, namespace, unique):
    """Both sides change one table: the merge is refused with the conflict and changes nothing,
    until a strategy settles it."""
    table = f"{namespace}.{unique}"
    create_orders(spark, table)
    branch = f"{unique}_b"
    api("POST", "refs", {"name": branch})
    spark.sql(
        f"INSERT INTO lake.db.`{unique}@{branch}` VALUES (5, 'kiwi', 2, TIMESTAMP '2026-11-05 09:00:00')"
    )
    spark.sql(f"INSERT INTO {table} VALUES (6, 'lime', 4, TIMESTAMP '2026-11-06 09:00:00')")
    with pytest.raises(AssertionError, match="409"):
        api("POST", "merge", {"source": branch})
    spark.sql(f"REFRESH TABLE {table}")
    assert sorted(r[0] for r in rows(spark, f"SELECT id FROM {table}")) == [1, 2, 3, 4, 6]
    api("POST", "merge", {"source": branch, "strategy": "prefer-theirs"})
    spark.sql(f"REFRESH TABLE {table}")
    assert sorted(r[0] for r in rows(spark, f"SELECT id FROM {table}")) == [1, 2, 3, 4, 5]
    # Spark keeps committing on top of the table the merge chose.
    spark.sql(f"INSERT INTO {table} VALUES (7, 'date', 1, TIMESTAMP '2026-11-07 09:00:00')")
    assert scalar(spark, f"SELECT count(*) FROM {table}") == 6


def test_dataframe_writes_and_schema_merge(spark, namespace, unique):
    """The DataFrameWriterV2 API; a write that adds a column commits the new schema and the
    snapshot together."""
    table = f"{namespace}.{unique}"
    first = spark.createDataFrame([(1, "a"), (2, "b")], "id BIGINT, item STRING")
    first.writeTo(table).using("iceberg").partitionedBy("item").tableProperty(
        "write.spark.accept-any-schema", "true"
    ).create()
    wider = spark.createDataFrame([(3, "c", 1.5)], "id BIGINT, item STRING, price DOUBLE")
    wider.writeTo(table).option("merge-schema", "true").append()
    assert rows(spark, f"SELECT id, price FROM {table} ORDER BY id") == [(1, None), (2, None), (3, 1.5)]
    spark.createDataFrame([(4, "a", 2.0)], "id BIGINT, item STRING, price DOUBLE").writeTo(
        table
    ).overwritePartitions()
    assert rows(spark, f"SELECT id, item FROM {table} ORDER BY id") == [(2, "b"), (3, "c"), (4, "a")]
    first.writeTo(table).using("iceberg").createOrReplace()
    assert rows(spark, f"SELECT * FROM {table} ORDER BY id") == [(1, "a"), (2, "b")]


def test_metadata_files_parse_with_the_java_library(spark, namespace, unique):
    """Every metadata file the server wrote for a table parses with Iceberg's own parser and
    says what the REST answer said."""
    table = f"{namespace}.{unique}"
    create_orders(spark, table, "'write.delete.mode' = 'merge-on-read'")
    spark.sql(f"ALTER TABLE {table} ADD COLUMN note STRING")
    spark.sql(f"ALTER TABLE {table} CREATE TAG t1")
    spark.sql(f"DELETE FROM {table} WHERE id = 1")
    spark.sql(f"ALTER TABLE {table} ADD PARTITION FIELD item")
    spark.sql(f"ALTER TABLE {table} WRITE ORDERED BY qty")
    spark.sql(f"INSERT INTO {table} VALUES (5, 'kiwi', 2, TIMESTAMP '2026-11-05 09:00:00', 'n')")
    jvm = spark._jvm
    io = jvm.org.apache.iceberg.hadoop.HadoopFileIO(spark._jsc.hadoopConfiguration())
    files = [r[0] for r in rows(spark, f"SELECT file FROM {table}.metadata_log_entries ORDER BY timestamp")]
    assert len(files) == 8  # the create, then one per statement
    parsed = [jvm.org.apache.iceberg.TableMetadataParser.read(io, f) for f in files]
    assert [m.metadataFileLocation() for m in parsed] == files
    last = parsed[-1]
    assert last.formatVersion() == 2
    assert last.currentSnapshot().snapshotId() == snapshot_ids(spark, table)[-1]
    assert last.schema().findField("note") is not None
    assert last.spec().fields().size() == 3 and last.sortOrder().fields().size() == 1
    assert last.ref("t1").isTag()
    # Each file's log lists the ones before it.
    assert [e.file() for e in last.previousFiles()] == files[:-1]
    assert [m.lastSequenceNumber() for m in parsed] == [0, 1, 1, 1, 2, 2, 2, 3]
