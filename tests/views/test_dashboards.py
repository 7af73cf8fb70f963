"""docs/dashboards.md stays true: every query it shows runs, in DuckDB and in Spark SQL, over an audited
dump, the two dialects give the same answer, and that answer is what the audit's tables hold, worked out
here row by row from the tables themselves.

The doc marks each block with an HTML comment before it: `<!-- duckdb: NAME -->`, `<!-- spark: NAME -->`,
or `<!-- duckdb, spark: NAME -->` for a query both run as written; `<!-- python: NAME -->` for the setup
snippets, which run here with the doc's folder replaced by the fixture's.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta
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


# Each panel worked out from the audit's tables in Python, as its query describes it ---------------------

DAY_MS = 86_400_000


def _rows(audited: Path, table: str) -> list[dict]:
    from offset_audit.views.audit_folder import read_table

    return read_table(str(audited), table).to_pylist()


def _newest(rows: list[dict]) -> str:
    """The snapshot the queries call `latest`: the latest as_of, ties broken by the greatest snapshot id."""
    return max((r["as_of"], r["snapshot_id"]) for r in rows)[1]


def _total(values) -> int | None:
    """SQL's sum: None over no values (or only nulls)."""
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _by(rows: list[dict], *keys: str) -> dict[tuple, list[dict]]:
    found: dict[tuple, list[dict]] = {}
    for row in rows:
        found.setdefault(tuple(row[k] for k in keys), []).append(row)
    return found


def _last_nulls(value) -> tuple:
    """ORDER BY's ascending place of a value in DuckDB: nulls last."""
    return (value is None, value if value is not None else 0)


def _expected_panel(panel: str, audited: Path) -> list[tuple]:
    parts, groups = _rows(audited, "partition_verdicts"), _rows(audited, "group_verdicts")
    latest = _newest(groups)
    newest_parts = [p for p in parts if p["snapshot_id"] == latest]
    if panel == "total-lag-by-group":
        with_lag = _by([p for p in newest_parts if p["lag"] is not None], "group_id")
        rows = [(g, sum(p["lag"] for p in ps), len(ps)) for (g,), ps in with_lag.items()]
        return sorted(rows, key=lambda r: (-r[1], r[0]))
    if panel == "stale-lag":
        rows = []
        for (g,), ps in _by([p for p in newest_parts if p["lag"] is not None], "group_id").items():
            expired_lag = sum(p["lag"] if p["expired"] else 0 for p in ps)
            stale = _total(p["stale_lag"] for p in ps)
            if expired_lag > 0 or (stale or 0) > 0:
                rows.append((g, expired_lag, stale, sum(1 for p in ps if p["expired"])))
        return sorted(rows, key=lambda r: (-r[1], -(r[2] or 0), r[0]))
    if panel == "expiring-soon":
        soon = [
            p
            for p in newest_parts
            if not p["expired"] and p["time_to_expiry_ms"] is not None and p["time_to_expiry_ms"] <= 7 * DAY_MS
        ]
        rows = [
            (g, t, sum(1 for p in ps if p["time_to_expiry_ms"] <= DAY_MS), len(ps), min(p["expires_at"] for p in ps))
            for (g, t), ps in _by(soon, "group_id", "topic").items()
        ]
        return sorted(rows, key=lambda r: (r[4], r[0], r[1]))
    if panel == "groups-removed":
        week = timedelta(days=7)
        removed = [
            g
            for g in groups
            if g["snapshot_id"] == latest
            and (
                g["would_delete"] or (g["group_expires_at"] is not None and g["group_expires_at"] <= g["as_of"] + week)
            )
        ]
        rows = [
            (g["group_id"], g["group_type"], g["group_state"], g["offset_count"], g["would_delete"],
             g["group_expires_at"])
            for g in removed
        ]  # fmt: skip
        return sorted(rows, key=lambda r: (_last_nulls(r[5]), r[0]))
    if panel == "commit-age":
        rows = []
        for (g,), ps in _by(newest_parts, "group_id").items():
            as_of_ms = _epoch_ms(max(p["as_of"] for p in ps))
            commits = [p["commit_timestamp_ms"] for p in ps]
            rows.append((g, (as_of_ms - max(commits)) / 3_600_000, (as_of_ms - min(commits)) / 3_600_000, len(ps)))
        return sorted(rows, key=lambda r: (-r[1], r[0]))
    if panel == "lag-over-snapshots":
        rows = [
            (snapshot, as_of, _total(p["lag"] for p in ps), _total(p["stale_lag"] for p in ps),
             sum(1 for p in ps if p["expired"]), len(ps), len({p["group_id"] for p in ps}))
            for (snapshot, as_of), ps in _by(parts, "snapshot_id", "as_of").items()
        ]  # fmt: skip
        return sorted(rows, key=lambda r: (r[1], r[0]))
    if panel == "whatif-curve":
        whatif = _rows(audited, "whatif")
        as_of, snapshot = max((w["as_of"], w["snapshot_id"]) for w in whatif)
        rows = [
            (w["retention_minutes"], w["retention_minutes"] / 1440, w["offsets_expired"],
             w["offsets_expired"] / w["offsets_total"], w["groups_deleted"], w["groups_total"])
            for w in whatif
            if (w["snapshot_id"], w["as_of"]) == (snapshot, as_of)
        ]  # fmt: skip
        return sorted(rows, key=lambda r: r[0])
    raise AssertionError(f"no reference for the panel {panel}")


def _epoch_ms(moment: datetime) -> int:
    aware = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return int(aware.timestamp() * 1000)


@pytest.mark.parametrize("panel", sorted(PANELS))
def test_a_panel_gives_what_the_audits_tables_hold(panel, duckdb_connection, audited):
    _, rows = _duckdb_rows(duckdb_connection, BLOCKS["duckdb"][panel])
    expected = [tuple(_plain(v) for v in row) for row in _expected_panel(panel, audited)]
    assert expected, f"{panel}: the audited fixture gives it no rows"
    assert _same(rows, expected), (rows[:5], expected[:5])
