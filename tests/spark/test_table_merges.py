"""Spark appends to one table on two branches, and the merge with `table-merge` on combines
them: Spark reads every row of both sides from the merged table and keeps writing to it. An
update on one side stays a conflict that says why."""

import pytest
from test_spark import create_orders, rows, scalar


def test_spark_appends_on_two_branches_merge_into_every_row(spark, api, spark_catalog_at, namespace, unique):
    table = f"{namespace}.{unique}"
    create_orders(spark, table)
    dev = f"{unique}_dev"
    api("POST", "refs", {"name": dev})
    at_dev = spark_catalog_at(f"lake_{unique}", f"default@{dev}")
    spark.sql(f"INSERT INTO {table} VALUES (5, 'kiwi', 2, TIMESTAMP '2026-11-05 09:00:00')")
    spark.sql(
        f"""INSERT INTO {at_dev}.db.{unique} VALUES (6, 'lime', 4, TIMESTAMP '2026-11-06 09:00:00'),
            (7, 'plum', 1, TIMESTAMP '2026-11-07 09:00:00')"""
    )
    with pytest.raises(AssertionError, match="409"):
        api("POST", "merge", {"source": dev})

    merged = api("POST", "merge", {"source": dev, "table-merge": "auto"})
    assert merged["result"] == "merged", merged
    assert merged["table-merges"][0]["key"] == ["db", unique]
    spark.sql(f"REFRESH TABLE {table}")
    assert [r[0] for r in rows(spark, f"SELECT id FROM {table} ORDER BY id")] == [1, 2, 3, 4, 5, 6, 7]
    # Filters that prune by partition read the source's files too.
    assert scalar(spark, f"SELECT count(*) FROM {table} WHERE ts >= TIMESTAMP '2026-11-06'") == 2
    snapshots = rows(spark, f"SELECT operation, summary['added-records'] FROM {table}.snapshots ORDER BY committed_at")
    assert snapshots[-1] == ("append", "2"), snapshots
    # Every file is attributed to a snapshot the merged table has.
    snapshot_ids = {r[0] for r in rows(spark, f"SELECT snapshot_id FROM {table}.snapshots")}
    assert {r[0] for r in rows(spark, f"SELECT snapshot_id FROM {table}.entries")} <= snapshot_ids
    spark.sql(f"INSERT INTO {table} VALUES (8, 'date', 1, TIMESTAMP '2026-11-08 09:00:00')")
    assert scalar(spark, f"SELECT count(*) FROM {table}") == 8


def test_an_update_on_one_side_stays_a_conflict(spark, api, spark_catalog_at, namespace, unique):
    table = f"{namespace}.{unique}"
    create_orders(spark, table)
    dev = f"{unique}_dev"
    api("POST", "refs", {"name": dev})
    at_dev = spark_catalog_at(f"lake_{unique}", f"default@{dev}")
    spark.sql(f"INSERT INTO {table} VALUES (5, 'kiwi', 2, TIMESTAMP '2026-11-05 09:00:00')")
    spark.sql(f"UPDATE {at_dev}.db.{unique} SET qty = 0 WHERE id = 1")
    with pytest.raises(AssertionError) as refused:
        api("POST", "merge", {"source": dev, "table-merge": "auto"})
    assert "table-changes-overlap" in str(refused.value) and "not an append" in str(refused.value)
