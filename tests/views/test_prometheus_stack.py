"""The metrics in the real stack: the demo audit's `metrics` file read by node_exporter's textfile collector,
pushed to a Pushgateway, scraped by Prometheus with the shipped rules (conf/prometheus), and every panel
of the shipped Grafana dashboard (conf/grafana) queried there against what the audit's tables hold.

Grafana itself is not in the package registries this project draws from, so running each panel's query
against the real Prometheus stands in for rendering the dashboard.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from live_services import live
from prometheus_stack import alerts, binary, node_exporter, prometheus, pushgateway, values, wait_for
from repo_paths import DOCS, ROOT

from offset_audit.cli.main import main
from offset_audit.views.audit_folder import read_snapshot, read_table, snapshots
from offset_audit.views.metric_scope import Scope
from offset_audit.views.prometheus import snapshot_metrics

pytestmark = pytest.mark.slow

RULES = ROOT / "conf" / "prometheus" / "offset-audit-rules.yml"
RULE_TESTS = ROOT / "tests" / "prometheus" / "offset-audit-rules.test.yml"
DASHBOARD = ROOT / "conf" / "grafana" / "kafka-offset-audit.json"
DASHBOARDS_DOC = DOCS / "dashboards.md"
DAY_S = 86_400


def _panels() -> dict[str, str]:
    """The dashboard's panels: title -> its one query."""
    dashboard = json.loads(DASHBOARD.read_text())
    out = {}
    for panel in dashboard["panels"]:
        (target,) = panel["targets"]
        out[panel["title"]] = target["expr"]
    return out


def _as_grafana_sends(promql: str, clusters: str = ".*") -> str:
    """A panel's query as Grafana sends it: its $cluster variable replaced by the clusters chosen (All
    is the variable's allValue, .*, which also matches series without the label)."""
    return promql.replace("$cluster", clusters)


def _alert_rules() -> dict[str, dict]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return {r["alert"]: r for g in groups for r in g["rules"] if "alert" in r}


# The rules, by promtool ------------------------------------------------------------------------------


def test_the_rules_pass_promtools_check_and_their_unit_tests():
    promtool = str(_binary("promtool"))
    checked = subprocess.run([promtool, "check", "rules", str(RULES)], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = subprocess.run(
        [promtool, "test", "rules", RULE_TESTS.name], cwd=RULE_TESTS.parent, capture_output=True, text=True, check=False
    )
    assert tested.returncode == 0 and "SUCCESS" in tested.stdout, tested.stdout + tested.stderr


def _binary(name: str) -> Path:
    from live_services import Unavailable

    try:
        return binary(name)
    except Unavailable as reason:
        pytest.skip(str(reason))


# The docs show what is shipped ------------------------------------------------------------------------


def _doc_blocks(kind: str) -> dict[str, str]:
    text = DASHBOARDS_DOC.read_text()
    return {
        m.group(1): m.group(2).strip()
        for m in re.finditer(rf"<!-- {kind}: (.+?) -->\n```(?:promql|yaml)?\n(.*?)```", text, re.S)
    }


def test_the_docs_show_every_dashboard_panel_with_its_query():
    assert _doc_blocks("grafana-panel") == _panels()


def test_the_docs_show_every_alert_with_its_expression():
    shown = _doc_blocks("prometheus-alert")
    assert shown == {name: rule["expr"].strip() for name, rule in _alert_rules().items()}


# The real stack over the demo audit ----------------------------------------------------------------------


@dataclass(frozen=True)
class Stack:
    prometheus: str
    pushgateway: str
    audit: Path
    partitions: list[dict]
    groups: list[dict]
    run: dict
    as_of_s: float


def _cli(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.stderr


@pytest.fixture(scope="module")
def stack(demo, tmp_path_factory):
    workdir, _ = demo
    audit = workdir / "demo-output"
    folder = tmp_path_factory.mktemp("prometheus-stack")
    textfiles = folder / "textfile"
    textfiles.mkdir()
    _cli("metrics", "--audit", str(audit), "--output", str(textfiles / "offset_audit.prom"))
    snapshot_id = snapshots(str(audit))[-1].snapshot_id
    partitions = read_snapshot(str(audit), "partition_verdicts", snapshot_id).to_pylist()
    groups = read_snapshot(str(audit), "group_verdicts", snapshot_id).to_pylist()
    runs = [r for r in read_table(str(audit), "runs").to_pylist() if r["command"] == "audit"]
    # The demo audits one dump twice (its text and its --json example): the same snapshot, two runs.
    run = max((r for r in runs if r["snapshot_id"] == snapshot_id), key=lambda r: r["finished_at"])
    with (
        live(node_exporter(textfiles, folder)) as node,
        live(pushgateway(folder)) as gateway,
        live(
            prometheus(
                folder,
                {"node": node.url.removeprefix("http://"), "pushgateway": gateway.url.removeprefix("http://")},
                [RULES],
            )
        ) as server,
    ):
        wait_for(
            "Prometheus to scrape the textfile",
            lambda: values(server.url, "count(kafka_offset_audit_group_info)") == {frozenset(): float(len(groups))},
        )
        yield Stack(server.url, gateway.url, audit, partitions, groups, run, _seconds(groups[0]["as_of"]))


def _seconds(moment: datetime) -> float:
    """A timestamp of the tables (naive ones are UTC) in seconds since the epoch."""
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def _expected(stack: Stack) -> dict[str, dict[frozenset, float]]:
    """Each panel's answer worked out from the audit's tables, as {labels: value}."""
    parts, groups = stack.partitions, stack.groups
    lags = _group_lags(stack)
    by_state: dict[tuple, int] = {}
    for g in groups:
        by_state[(g["group_type"], g["group_state"])] = by_state.get((g["group_type"], g["group_state"]), 0) + 1
    deletable: dict[str, int] = {}
    for p in parts:
        if p["deletable_now"]:
            deletable[p["group_id"]] = deletable.get(p["group_id"], 0) + 1

    def one(value) -> dict[frozenset, float]:
        return {frozenset(): float(value)}

    return {
        "Committed offsets": one(sum(g["offset_count"] for g in groups)),
        "Samples left out by --max-samples": one(0),
        "Total lag": one(sum(lags.values())),
        "Stale lag (partitions nobody consumes)": one(sum(p["stale_lag"] or 0 for p in parts)),
        "Groups by type and state": {
            frozenset({"group_type": t, "group_state": s}.items()): float(n) for (t, s), n in by_state.items()
        },
        "Offsets --delete-offsets would remove now, by group": {
            frozenset({"__name__": "kafka_offset_audit_group_deletable_offsets", "group": g}.items()): float(n)
            for g, n in deletable.items()
        },
        "Offsets expiring within 24 h of the audit": {
            frozenset(
                {
                    "__name__": "kafka_offset_audit_partition_expiry_seconds",
                    "group": p["group_id"],
                    "topic": p["topic"],
                    "partition": str(p["partition"]),
                }.items()
            ): p["time_to_expiry_ms"] / 1000
            for p in parts
            if p["time_to_expiry_ms"] is not None and 0 <= p["time_to_expiry_ms"] <= DAY_S * 1000
        },
        "Groups with expired offsets": {
            frozenset({"__name__": "kafka_offset_audit_group_expired_offsets", "group": g["group_id"]}.items()): float(
                g["expired_offset_count"]
            )
            for g in groups
            if g["expired_offset_count"]
        },
        "Groups the next sweep removes": {
            frozenset({"__name__": "kafka_offset_audit_group_would_delete", "group": g["group_id"]}.items()): 1.0
            for g in groups
            if g["would_delete"]
        },
    }


def test_every_dashboard_panel_gets_the_demo_audits_answer(stack):
    expected = _expected(stack)
    for title, promql in _panels().items():
        got = values(stack.prometheus, _as_grafana_sends(promql))
        assert got, f"panel {title!r} ({promql}) got no data"
        if title in expected:
            assert got == expected[title], title
    lags = sorted((float(v) for v in _group_lags(stack).values()), reverse=True)[:10]
    assert sorted(values(stack.prometheus, "topk(10, kafka_offset_audit_group_lag)").values(), reverse=True) == lags
    now = time.time()
    (age,) = values(stack.prometheus, _as_grafana_sends(_panels()["Age of the audited snapshot"])).values()
    assert math.isclose(age, now - stack.as_of_s, abs_tol=120)
    (since,) = values(stack.prometheus, _as_grafana_sends(_panels()["Since the last successful audit"])).values()
    assert math.isclose(since, now - _seconds(stack.run["finished_at"]), abs_tol=120)
    for name in ("Offsets expiring within 24 h of the audit", "Groups with expired offsets"):
        assert expected[name], f"the demo audit has none for {name!r}: the check would be empty"


def _group_lags(stack: Stack) -> dict[str, int]:
    lags: dict[str, int] = {}
    for p in stack.partitions:
        if p["lag"] is not None:
            lags[p["group_id"]] = lags.get(p["group_id"], 0) + p["lag"]
    return lags


def _firing(stack: Stack, name: str) -> set[tuple]:
    return {
        tuple(sorted((k, v) for k, v in a["labels"].items() if k in ("group", "topic", "partition")))
        for a in alerts(stack.prometheus)
        if a["labels"]["alertname"] == name and a["state"] == "firing"
    }


def test_the_alerts_fire_for_the_demos_expiring_and_expired_offsets(stack):
    members = {g["group_id"]: g["member_count"] for g in stack.groups}
    soon = {
        (("group", p["group_id"]), ("partition", str(p["partition"])), ("topic", p["topic"]))
        for p in stack.partitions
        if p["time_to_expiry_ms"] is not None and 0 <= p["time_to_expiry_ms"] <= DAY_S * 1000
    }
    idle_soon = {k for k in soon if not members[k[0][1]]}
    assert idle_soon, "the demo has offsets of idle groups expiring within 24 h"
    wait_for("KafkaOffsetsExpireSoon to fire", lambda: _firing(stack, "KafkaOffsetsExpireSoon") == idle_soon)
    assert _firing(stack, "KafkaOffsetsExpireSoonInActiveGroup") == soon - idle_soon
    expired_active = {
        (("group", g["group_id"]),) for g in stack.groups if g["expired_offset_count"] and g["member_count"]
    }
    assert expired_active
    wait_for(
        "KafkaActiveGroupOffsetsExpired", lambda: _firing(stack, "KafkaActiveGroupOffsetsExpired") == expired_active
    )
    stale = {(("group", g),) for g in {p["group_id"] for p in stack.partitions if p["stale_lag"]}}
    wait_for("KafkaStaleLag", lambda: _firing(stack, "KafkaStaleLag") == stale)
    # The audit ran minutes ago, though the snapshot it judged is a month old: the alert watches when the
    # run finished (last_success_timestamp_seconds), so it stays quiet. The rules of its group were
    # evaluated: the alerts above fired.
    assert time.time() - _seconds(stack.run["finished_at"]) < 3600 < time.time() - stack.as_of_s
    assert not _firing(stack, "KafkaOffsetAuditNotSucceeding")


# A fleet in one folder ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fleet:
    prometheus: str
    partitions: dict[str, list[dict]]  # cluster -> its newest snapshot's partition verdicts
    groups: dict[str, list[dict]]


@pytest.fixture(scope="module")
def fleet(demo, spark, tmp_path_factory):
    """The demo dump audited as two clusters into one folder: eu as of the dump's newest record, us 20 h
    later. The same group names in both, with different offsets expiring within a day: what the rules
    must keep apart. The folder's metrics (both clusters, one file) scraped by a Prometheus of its own."""
    from offset_audit.runs.audit import run_audit
    from offset_audit.runtime.config import load_settings

    workdir, _ = demo
    folder = tmp_path_factory.mktemp("prometheus-fleet")
    audit = folder / "fleet"
    first = run_audit(spark, [str(workdir / "demo-input")], str(audit), load_settings(cluster="eu"))
    later = (first.as_of + timedelta(hours=20)).strftime("%Y-%m-%dT%H:%M:%S")
    run_audit(spark, [str(workdir / "demo-input")], str(audit), load_settings(cluster="us", as_of=later))
    textfiles = folder / "textfile"
    textfiles.mkdir()
    _cli("metrics", "--audit", str(audit), "--output", str(textfiles / "offset_audit.prom"))
    newest = {s.cluster: s.snapshot_id for s in snapshots(str(audit))}
    partitions = {c: read_snapshot(str(audit), "partition_verdicts", s).to_pylist() for c, s in newest.items()}
    groups = {c: read_snapshot(str(audit), "group_verdicts", s).to_pylist() for c, s in newest.items()}
    with (
        live(node_exporter(textfiles, folder)) as node,
        live(prometheus(folder, {"node": node.url.removeprefix("http://")}, [RULES])) as server,
    ):
        wait_for(
            "Prometheus to scrape the fleet's textfile",
            lambda: (
                values(server.url, "count by (cluster) (kafka_offset_audit_group_info)")
                == {frozenset({"cluster": c}.items()): float(len(g)) for c, g in groups.items()}
            ),
        )
        yield Fleet(server.url, partitions, groups)


def _fleet_firing(url: str, name: str) -> set[tuple]:
    return {
        tuple(sorted((k, v) for k, v in a["labels"].items() if k in ("cluster", "group", "topic", "partition")))
        for a in alerts(url)
        if a["labels"]["alertname"] == name and a["state"] == "firing"
    }


def test_the_alerts_fire_per_cluster_of_a_fleet_in_one_folder(fleet):
    soon, idle_soon, expired_active = set(), set(), set()
    for cluster, partitions in fleet.partitions.items():
        members = {g["group_id"]: g["member_count"] for g in fleet.groups[cluster]}
        for p in partitions:
            if p["time_to_expiry_ms"] is not None and 0 <= p["time_to_expiry_ms"] <= DAY_S * 1000:
                key = (("cluster", cluster), ("group", p["group_id"]), ("partition", str(p["partition"])))
                key += (("topic", p["topic"]),)
                soon.add(key)
                if not members[p["group_id"]]:
                    idle_soon.add(key)
        expired_active |= {
            (("cluster", cluster), ("group", g["group_id"]))
            for g in fleet.groups[cluster]
            if g["expired_offset_count"] and g["member_count"]
        }
    # The check can fail: the clusters share group names, and differ in what expires within the day.
    by_cluster = {c: {k[1:] for k in soon if k[0][1] == c} for c in fleet.partitions}
    assert by_cluster["eu"] and by_cluster["us"] and by_cluster["eu"] != by_cluster["us"]
    wait_for(
        "KafkaOffsetsExpireSoon to fire per cluster",
        lambda: _fleet_firing(fleet.prometheus, "KafkaOffsetsExpireSoon") == idle_soon,
    )
    assert _fleet_firing(fleet.prometheus, "KafkaOffsetsExpireSoonInActiveGroup") == soon - idle_soon
    wait_for(
        "KafkaActiveGroupOffsetsExpired per cluster",
        lambda: _fleet_firing(fleet.prometheus, "KafkaActiveGroupOffsetsExpired") == expired_active,
    )
    # The recording rules are a group of their own, evaluated on their own clock: wait for it too.
    recorded = {
        frozenset({"__name__": "kafka_offset_audit:offsets:sum", "cluster": c}.items()): float(
            sum(g["offset_count"] for g in groups)
        )
        for c, groups in fleet.groups.items()
    }
    wait_for(
        "kafka_offset_audit:offsets:sum per cluster",
        lambda: values(fleet.prometheus, "kafka_offset_audit:offsets:sum") == recorded,
    )
    # The dashboard with one cluster chosen answers for that cluster alone.
    committed = _as_grafana_sends(_panels()["Committed offsets"], "us")
    assert values(fleet.prometheus, committed) == {
        frozenset(): float(sum(g["offset_count"] for g in fleet.groups["us"]))
    }


def test_a_push_to_the_pushgateway_serves_the_same_series(stack):
    """Last in this module: once pushed, every series is there twice (textfile and Pushgateway)."""
    said = _cli("metrics", "--audit", str(stack.audit), "--push-gateway", stack.pushgateway,
                "--push-grouping-key", "cluster=demo")  # fmt: skip
    assert said.startswith("pushed ") and stack.pushgateway in said
    pushed = '{cluster="demo",job="kafka_offset_audit",__name__=~"kafka_offset_audit_.*"}'
    textfile = '{job="node",__name__=~"kafka_offset_audit_.*"}'
    count = values(stack.prometheus, f"count({textfile})")
    wait_for("Prometheus to scrape the push", lambda: values(stack.prometheus, f"count({pushed})") == count)
    for metric in ("kafka_offset_audit_group_lag", "kafka_offset_audit_partition_expiry_seconds"):
        same = values(
            stack.prometheus,
            f'{metric}{{cluster="demo"}} - ignoring(cluster, job, instance) {metric}{{job="node"}}',
        )
        assert same and set(same.values()) == {0.0}, metric
    # The next push replaces the group: the series of a group left out are gone from the gateway.
    _cli("metrics", "--audit", str(stack.audit), "--push-gateway", stack.pushgateway,
         "--push-grouping-key", "cluster=demo", "--exclude-group", "classic-.*")  # fmt: skip
    wait_for(
        "the replaced push",
        lambda: (
            values(stack.prometheus, 'count(kafka_offset_audit_group_info{cluster="demo",group=~"classic-.*"})') == {}
        ),
    )
    assert values(stack.prometheus, 'kafka_offset_audit_metrics_left_out_samples{cluster="demo"}') == {
        frozenset({"__name__": "kafka_offset_audit_metrics_left_out_samples", "cluster": "demo"}.items()): 0.0
    }
    # A push past a small budget: the series count what it left out, and the alert says so.
    cut = snapshot_metrics(str(stack.audit), scope=Scope(max_samples=40))
    assert cut.wanted > cut.samples
    _cli("metrics", "--audit", str(stack.audit), "--push-gateway", stack.pushgateway,
         "--push-grouping-key", "cluster=demo", "--max-samples", "40")  # fmt: skip
    wait_for(
        "KafkaOffsetAuditMetricsIncomplete to fire with the count left out",
        lambda: (
            [
                (a["labels"].get("cluster"), float(a["value"]))
                for a in alerts(stack.prometheus)
                if a["labels"]["alertname"] == "KafkaOffsetAuditMetricsIncomplete" and a["state"] == "firing"
            ]
            == [("demo", float(cut.wanted - cut.samples))]
        ),
    )
