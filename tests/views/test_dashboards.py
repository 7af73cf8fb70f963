"""docs/dashboards.md stays true: every query it shows runs, in DuckDB and in Spark SQL, over an audited
dump, and the two dialects give the same answer.

The doc marks each block with an HTML comment before it: `<!-- duckdb: NAME -->`, `<!-- spark: NAME -->`,
or `<!-- duckdb, spark: NAME -->` for a query both run as written; `<!-- python: NAME -->` for the setup
snippets, which run here with the doc's folder replaced by the fixture's.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from repo_paths import DOCS

DASHBOARDS = DOCS / "dashboards.md"
DOC_FOLDER = "/data/offset-audit"
BLOCK = re.compile(r"<!-- ([a-z, ]+): ([\w-]+) -->\n```(\w+)\n(.*?)```", re.S)

# The columns each panel's query returns, in order.
PANELS = {
    "total-lag-by-group": ["group_id", "total_lag", "partitions"],
    "stale-lag": ["group_id", "expired_lag", "stale_lag", "expired_offsets"],
    "expiring-soon": ["group_id", "topic", "expiring_24h", "expiring_7d", "next_expiry_at"],
    "groups-removed": ["group_id", "group_type", "group_state", "offset_count", "would_delete", "group_expires_at"],
    "commit-age": ["group_id", "newest_commit_age_hours", "oldest_commit_age_hours", "partitions"],
    "lag-over-snapshots": ["snapshot_id", "as_of", "total_lag", "stale_lag", "expired_offsets", "offsets", "groups"],
    "whatif-curve": [
        "retention_minutes",
        "retention_days",
        "offsets_expired",
        "expired_share",
        "groups_deleted",
        "groups_total",
    ],
}


def _blocks() -> dict[str, dict[str, str]]:
    """Code blocks by engine (duckdb, spark, python), then by name."""
    found: dict[str, dict[str, str]] = {}
    for engines, name, _language, code in BLOCK.findall(DASHBOARDS.read_text()):
        for engine in (e.strip() for e in engines.split(",")):
            assert name not in found.setdefault(engine, {}), f"two {engine} blocks named {name}"
            found[engine][name] = code
    return found


BLOCKS = _blocks()


def test_every_panel_has_a_duckdb_and_a_spark_query():
    assert set(BLOCKS["duckdb"]) == set(PANELS)
    assert set(BLOCKS["spark"]) == set(PANELS)
    assert set(BLOCKS["python"]) == {"duckdb-setup", "spark-setup"}


def _setup(name: str, audited: Path, **names) -> dict:
    code = BLOCKS["python"][name].replace(DOC_FOLDER, str(audited))
    assert code != BLOCKS["python"][name], f"the {name} snippet does not read {DOC_FOLDER}"
    scope = dict(names)
    exec(compile(code, f"docs/dashboards.md ({name})", "exec"), scope)
    return scope


@pytest.fixture(scope="module")
def duckdb_connection(audited):
    scope = _setup("duckdb-setup", audited)
    yield scope["con"]
    scope["con"].close()


@pytest.fixture(scope="module")
def spark_views(spark, audited):
    _setup("spark-setup", audited, spark=spark)
    yield spark
    for name in ("partition_verdicts", "group_verdicts", "whatif"):
        spark.catalog.dropTempView(name)


def _plain(value):
    """One value as both engines can be compared on: naive UTC datetimes, integers for whole decimals."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    if isinstance(value, Decimal) and value == value.to_integral_value():
        return int(value)
    return value


def _duckdb_rows(connection, query: str) -> tuple[list[str], list[tuple]]:
    # Through Arrow: DuckDB's own Python conversion of TIMESTAMPTZ needs pytz.
    table = connection.sql(query).to_arrow_table()
    rows = [tuple(_plain(v) for v in row.values()) for row in table.to_pylist()]
    return table.column_names, rows


def _spark_rows(spark, query: str) -> tuple[list[str], list[tuple]]:
    frame = spark.sql(query)
    return frame.columns, [tuple(_plain(v) for v in row) for row in frame.collect()]


def _same(left: list[tuple], right: list[tuple]) -> bool:
    def close(a, b):
        if isinstance(a, float) or isinstance(b, float):
            return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9)
        return a == b

    return len(left) == len(right) and all(
        len(x) == len(y) and all(close(a, b) for a, b in zip(x, y, strict=True))
        for x, y in zip(left, right, strict=True)
    )


@pytest.mark.parametrize("panel", sorted(PANELS))
def test_a_panel_gives_the_same_rows_in_duckdb_and_spark(panel, duckdb_connection, spark_views):
    duckdb_columns, duckdb_rows = _duckdb_rows(duckdb_connection, BLOCKS["duckdb"][panel])
    spark_columns, spark_rows = _spark_rows(spark_views, BLOCKS["spark"][panel])
    assert duckdb_columns == spark_columns == PANELS[panel]
    assert duckdb_rows, f"{panel} returns no rows over the audited fixture"
    assert _same(duckdb_rows, spark_rows), (duckdb_rows[:5], spark_rows[:5])


def test_total_lag_by_group_adds_up_to_the_newest_snapshots_lag(duckdb_connection, audited):
    import pyarrow.compute as pc

    from offset_audit.views.audit_folder import read_snapshot, snapshots

    newest = snapshots(str(audited))[-1].snapshot_id
    lag = read_snapshot(str(audited), "partition_verdicts", newest, columns=["lag"]).column("lag")
    _, rows = _duckdb_rows(duckdb_connection, BLOCKS["duckdb"]["total-lag-by-group"])
    assert sum(total for _, total, _ in rows) == pc.sum(lag).as_py()
