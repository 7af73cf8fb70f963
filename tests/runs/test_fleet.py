"""A fleet in one folder: two generated clusters (broker folders, each with its meta.properties) audited into
one output folder, as full and as incremental runs. Every table, view and metric keeps them apart, each
cluster's verdicts are those it gets audited alone, and mixing them up is refused in one sentence."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner
from deltalake import DeltaTable

from offset_audit.cli.main import main
from offset_audit.errors import UserError
from offset_audit.generator.demo_dump import generate_dump
from offset_audit.generator.writers import snapshot_to_segments, write_meta_properties
from offset_audit.outputs.audit_state import read_state
from offset_audit.runs.audit import run_audit
from offset_audit.runtime.config import load_settings
from offset_audit.settings import KeepSnapshots
from offset_audit.views import fleet_report
from offset_audit.views.audit_folder import snapshots
from offset_audit.views.prometheus import snapshot_metrics

ID_A, ID_B = "AAAAAAAAAAAAAAAAAAAAAA", "BBBBBBBBBBBBBBBBBBBBBB"
VERDICT_TABLES = ("partition_verdicts", "group_verdicts", "deletion_candidates")


@pytest.fixture(scope="module")
def dumps(tmp_path_factory) -> dict[str, Path]:
    """Two clusters' broker folders: different seeds, so different groups and offsets, and group names the
    generator gives both (classic-empty-00007 and the like)."""
    folder = tmp_path_factory.mktemp("fleet-dumps")
    found = {}
    for name, seed, cluster_id in (("a", 1, ID_A), ("b", 2, ID_B)):
        generate_dump(str(folder / f"{name}-snapshot"), 4000, seed=seed, partitions=4)
        snapshot_to_segments(str(folder / f"{name}-snapshot"), str(folder / name))
        write_meta_properties(str(folder / name), cluster_id)
        found[name] = folder / name
    return found


def audit(spark, data: Path, output: Path, cluster: str | None = None, mode: str | None = None):
    settings = load_settings(input_format="segments", cluster=cluster)
    return run_audit(spark, [str(data)], str(output), settings, keep_state=mode)


def rows(output: Path, table: str) -> list[dict]:
    return DeltaTable(str(output / table)).to_pyarrow_table().to_pylist()


def without(found: list[dict], *columns: str) -> list[dict]:
    return sorted(({k: v for k, v in r.items() if k not in columns} for r in found), key=repr)


def cli(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture(scope="module")
def fleet(spark, dumps, tmp_path_factory) -> dict[str, Path]:
    """Each cluster audited alone into a folder of its own, and both into one folder: a under its id, b
    named eu."""
    folder = tmp_path_factory.mktemp("fleet")
    audit(spark, dumps["a"], folder / "alone-a")
    audit(spark, dumps["b"], folder / "alone-b")
    audit(spark, dumps["a"], folder / "fleet")
    audit(spark, dumps["b"], folder / "fleet", cluster="eu")
    return {"alone-a": folder / "alone-a", "alone-b": folder / "alone-b", "fleet": folder / "fleet"}


def test_every_table_names_the_cluster_of_each_row_and_holds_what_each_cluster_gets_alone(fleet):
    together = fleet["fleet"]
    for table in VERDICT_TABLES:
        found = rows(together, table)
        assert {r["cluster"] for r in found} == {ID_A, "eu"}, table
        for alone, name in (("alone-a", ID_A), ("alone-b", "eu")):
            mine = [r for r in found if r["cluster"] == name]
            assert without(mine, "snapshot_id", "cluster") == without(
                rows(fleet[alone], table), "snapshot_id", "cluster"
            )
    listed = {(r["cluster"], r["cluster_id"]) for r in rows(together, "snapshots")}
    assert listed == {(ID_A, ID_A), ("eu", ID_B)}
    runs = [r for r in rows(together, "runs") if r["command"] == "audit"]
    assert {(r["cluster"], r["cluster_id"]) for r in runs} == {(ID_A, ID_A), ("eu", ID_B)}
    # The working tables: the first cluster's at DIR/decoded, eu's apart, and each run's row says which.
    assert (together / "decoded" / "group_metadata" / "_delta_log").is_dir()
    assert (together / "clusters" / "eu" / "decoded" / "group_metadata" / "_delta_log").is_dir()
    eu_run = next(r for r in runs if r["cluster"] == "eu")
    assert "clusters/eu/decoded/group_metadata" in dict(eu_run["table_rows"])


def test_the_read_commands_take_one_cluster_and_refuse_to_guess(fleet):
    together, alone_b = str(fleet["fleet"]), str(fleet["alone-b"])
    guessed = cli("describe", "--audit", together)
    assert guessed.exit_code == 2 and guessed.output.count("\n") == 1
    assert f"holds the audits of 2 clusters (eu, {ID_A}): give --cluster NAME" in guessed.output
    described = cli("describe", "--audit", together, "--cluster", "eu")
    assert (
        described.exit_code == 0 and described.output.startswith("Snapshot ") and " of cluster eu " in described.output
    )
    by_id = cli("describe", "--audit", together, "--cluster", ID_B)
    assert by_id.output == described.output  # a cluster is found by its id too
    body = described.output.split("\n", 1)[1]
    assert body == cli("describe", "--audit", alone_b).output.split("\n", 1)[1]
    unknown = cli("delete-plan", "--audit", together, "--cluster", "us")
    assert unknown.exit_code == 2 and "holds no snapshot of cluster us (its clusters: eu, " in unknown.output
    plan = cli("delete-plan", "--audit", together, "--cluster", "eu")
    commands = [line for line in plan.output.splitlines() if not line.startswith("#")]
    assert "# Of cluster eu: give --bootstrap-server of that cluster." in plan.output
    alone = cli("delete-plan", "--audit", alone_b).output.splitlines()
    assert commands == [line for line in alone if not line.startswith("#")] and any(
        "--delete-offsets" in c for c in commands
    )


def test_metrics_label_every_series_with_its_cluster(fleet):
    together = str(fleet["fleet"])
    text = snapshot_metrics(together).text
    samples = [line for line in text.splitlines() if not line.startswith("#")]
    assert samples and all(re.search(r'\{cluster="(eu|' + ID_A + ')"', line) for line in samples)
    for name, alone in (("eu", "alone-b"), (ID_A, "alone-a")):
        mine = snapshot_metrics(together, cluster=name).text
        # One cluster's series are the fleet's lines of that cluster, and what the cluster alone gives
        # (its own snapshot id and run times aside).
        assert [line for line in samples if f'cluster="{name}"' in line] == [
            line for line in mine.splitlines() if not line.startswith("#")
        ]
        ignore = re.compile(r"snapshot_id=|last_success|last_run_duration")
        strip = [re.sub(r'cluster="[^"]*",?', "", line) for line in mine.splitlines() if not ignore.search(line)]
        theirs = snapshot_metrics(str(fleet[alone])).text.splitlines()
        assert strip == [re.sub(r'cluster="[^"]*",?', "", line) for line in theirs if not ignore.search(line)]
    pushed = cli(
        "metrics", "--audit", together, "--push-gateway", "http://127.0.0.1:9", "--push-grouping-key", "cluster=eu"
    )
    assert pushed.exit_code == 2 and "does not match the clusters of the metrics (" in pushed.output


def test_the_report_of_a_fleet_lists_its_clusters_urgent_first(fleet, tmp_path):
    together = str(fleet["fleet"])
    page = tmp_path / "fleet.html"
    written = cli("report", "--audit", together, "--output", str(page))
    assert written.exit_code == 0 and "the fleet's page, 2 clusters" in written.output
    fleet_ = fleet_report.read_fleet(together)
    ordered = fleet_report.cluster_rows(fleet_)
    assert [r["urgent"] for r in ordered] == sorted((r["urgent"] for r in ordered), reverse=True)
    assert {r["cluster"] for r in ordered} == {"eu", ID_A} and all(r["urgent"] for r in ordered)
    urgent = fleet_report.urgent_groups(fleet_)
    assert {g["cluster"] for g in urgent} == {"eu", ID_A}
    due = [g["due_now"] for g in urgent]
    assert due == sorted(due, reverse=True)  # what is due now first
    html = page.read_text()
    assert html.index("<h2>Clusters</h2>") < html.index("<h2>Urgent groups</h2>")
    one = tmp_path / "eu.html"
    assert cli("report", "--audit", together, "--cluster", "eu", "--output", str(one)).exit_code == 0
    assert "<dt>cluster</dt><dd>eu</dd>" in one.read_text()


def test_mixing_clusters_up_is_refused_before_spark_starts(fleet, dumps, no_spark, tmp_path):
    together = str(fleet["fleet"])
    cases = [
        (
            ["--input", str(dumps["a"]), "--cluster", "eu"],
            f"--cluster eu names cluster {ID_B} in '{together}', and this input is cluster {ID_A}",
        ),
        (
            ["--input", str(dumps["b"]), "--cluster", "us"],
            f"cluster {ID_B} is named eu in '{together}': give --cluster eu, or leave it out",
        ),
        (["--input", str(dumps["a"]), "--input", str(dumps["b"])], f"belong to 2 clusters ({ID_A}, {ID_B})"),
        (["--input", str(dumps["a"]), "--cluster", "two words"], "takes a cluster name of letters, digits"),
        (["--input", str(dumps["b"]), "--cluster", ID_A], f"--cluster {ID_A} names cluster {ID_A} in '{together}'"),
    ]
    for args, says in cases:
        result = cli("audit", *args, "--output", together)
        assert result.exit_code == 2 and says in result.output and result.output.count("\n") == 1, (args, result.output)


def test_every_kafka_cluster_id_is_a_name_and_nothing_that_could_leave_its_folder_is():
    """Kafka's ids are 16 random bytes in URL-safe base64: one in 32 starts with '-' or '_' (the live
    broker test met one)."""
    from offset_audit.settings import check_cluster_name

    for kafka_id in ("_uSARXo2RWCgiSmWTcX9Hw", "-b7UCcM2S4qlT6ye7VCvXQ", "MkU3OEVBNTcwNTJENDM2Qg"):
        assert check_cluster_name(kafka_id, "the input's cluster id") == kafka_id
    for bad in ("", ".", "..", ".hidden", "a/b", "two words", "x" * 65, "eu\n"):
        with pytest.raises(UserError, match="takes a cluster name of letters, digits"):
            check_cluster_name(bad, "--cluster")


def test_a_cluster_whose_id_starts_with_a_dash_is_named_by_it(spark, tmp_path):
    from offset_audit.runs.decode import run_decode

    kafka_id = "-b7UCcM2S4qlT6ye7VCvXQ"
    generate_dump(str(tmp_path / "snapshot"), 300, seed=3, partitions=2)
    snapshot_to_segments(str(tmp_path / "snapshot"), str(tmp_path / "broker"))
    write_meta_properties(str(tmp_path / "broker"), kafka_id)
    output = tmp_path / "decoded"
    run_decode(spark, [str(tmp_path / "broker")], str(output), load_settings(input_format="segments"))
    assert [(r["cluster"], r["cluster_id"]) for r in rows(output, "runs")] == [(kafka_id, kafka_id)]
    # Named by its id on the command line too: --cluster takes the next word whatever it starts with.
    again = cli("decode", "--input", str(tmp_path / "broker"), "--cluster", kafka_id, "--output", str(output))
    assert again.exit_code == 0, again.output


def test_decode_names_its_cluster_and_refuses_a_name_of_another(spark, dumps, no_spark, tmp_path):
    """decode takes --cluster as audit does: its runs row and summary name the cluster, and its folder's
    names are checked before Spark starts (no_spark: run_decode is given the session, the CLI may not start one)."""
    from offset_audit.runs.decode import run_decode
    from offset_audit.views.summary import decode_summary

    output = tmp_path / "decoded"
    report = run_decode(spark, [str(dumps["b"])], str(output), load_settings(input_format="segments", cluster="eu"))
    assert [(r["command"], r["cluster"], r["cluster_id"]) for r in rows(output, "runs")] == [("decode", "eu", ID_B)]
    assert f"  cluster eu (id {ID_B})" in decode_summary(report, str(output)).splitlines()
    refused = cli("decode", "--input", str(dumps["a"]), "--cluster", "eu", "--output", str(output))
    assert refused.exit_code == 2 and refused.output.count("\n") == 1
    assert f"--cluster eu names cluster {ID_B} in '{output}', and this input is cluster {ID_A}" in refused.output


def test_incremental_audits_of_two_clusters_keep_a_state_each(spark, dumps, fleet, tmp_path):
    together = tmp_path / "fleet"
    first_a = audit(spark, dumps["a"], together, mode="incremental")
    first_b = audit(spark, dumps["b"], together, cluster=ID_B, mode="incremental")  # named: it joins the folder
    assert first_a.report.state == first_b.report.state == "first"
    assert read_state(str(together)).cluster_id == ID_A
    assert read_state(str(together / "clusters" / ID_B)).cluster_id == ID_B
    again_a = audit(spark, dumps["a"], together, mode="incremental")
    again_b = audit(spark, dumps["b"], together, mode="incremental")  # known by its id now: no name needed
    assert again_a.report.state == again_b.report.state == "resumed"
    newest = {s.cluster: s.snapshot_id for s in snapshots(str(together))}
    for name, alone in ((ID_A, "alone-a"), (ID_B, "alone-b")):
        mine = [r for r in rows(together, "partition_verdicts") if r["snapshot_id"] == newest[name]]
        assert without(mine, "snapshot_id", "cluster") == without(
            rows(fleet[alone], "partition_verdicts"), "snapshot_id", "cluster"
        )
    # B's folders given to A's state, by A's name: refused in one sentence, nothing written.
    handed = cli("audit", "--input", str(dumps["b"]), "--output", str(together), "--incremental", "--cluster", ID_A)
    assert (
        handed.exit_code == 2
        and f"names cluster {ID_A} in '{together}', and this input is cluster {ID_B}" in handed.output
    )
    # history --audit reads one cluster's kept log: which one, it is told.
    history = cli("history", "--audit", str(together))
    assert history.exit_code == 2 and f"keeps the state of more than one cluster ({ID_A}, {ID_B})" in history.output
    told = cli("history", "--audit", str(together), "--cluster", ID_B, "--output", str(tmp_path / "history"))
    assert told.exit_code == 0, told.output
    assert {r["cluster"] for r in rows(tmp_path / "history", "offset_history")} == {ID_B}
    # A state folder is no audit folder: tidy refuses it, and the state keeps every version.
    for state in (together / "state", together / "clusters" / ID_B / "state"):
        versions = {t.name: DeltaTable(str(t)).version() for t in state.iterdir() if (t / "_delta_log").is_dir()}
        refused = cli("tidy", "--audit", str(state), "--deleted-file-retention", "0")
        assert refused.exit_code == 2 and "is not an audit's output folder" in refused.output, refused.output
        assert {name: DeltaTable(str(state / name)).version() for name in versions} == versions
        assert all(DeltaTable(str(state / name), version=0).version() == 0 for name in versions)


def test_retention_keeps_the_newest_snapshots_of_each_cluster(spark, dumps, tmp_path):
    together = tmp_path / "fleet"
    audit(spark, dumps["a"], together, cluster="eu")
    audit(spark, dumps["b"], together, cluster="us")
    settings = load_settings(input_format="segments", cluster="eu", keep_snapshots=KeepSnapshots(count=1))
    run_audit(spark, [str(dumps["a"])], str(together), settings, snapshot_id="eu-last")
    kept = {(s.cluster, s.snapshot_id) for s in snapshots(str(together))}
    assert ("us", next(s for c, s in kept if c == "us")) in kept and ("eu", "eu-last") in kept and len(kept) == 2


def files_of(table: Path, cluster: str) -> set[str]:
    """The live files of a table whose statistics say they hold `cluster`'s rows."""
    actions = pa.table(DeltaTable(str(table)).get_add_actions(flatten=True)).to_pylist()
    return {a["path"] for a in actions if a["min.cluster"] == a["max.cluster"] == cluster}


def snapshot_dump(dumps, name: str) -> str:
    """The cluster's dump as a Kafka-source snapshot: it carries no cluster id."""
    return str(dumps[name].parent / f"{name}-snapshot")


def test_two_clusters_that_give_their_snapshots_one_id_keep_both(spark, dumps, fleet, tmp_path):
    """A fixed hourly id per schedule, as an operator running a fleet writes it: neither cluster's run
    replaces the other's rows, in any table, and a run of one cluster again replaces its own alone."""
    together = tmp_path / "fleet"
    for name, cluster in (("a", "eu"), ("b", "us")):
        settings = load_settings(input_format="segments", cluster=cluster)
        run_audit(spark, [str(dumps[name])], str(together), settings, snapshot_id="hourly-2026102607")
    for table in VERDICT_TABLES:
        found = rows(together, table)
        assert {(r["cluster"], r["snapshot_id"]) for r in found} == {
            ("eu", "hourly-2026102607"),
            ("us", "hourly-2026102607"),
        }
        for cluster, alone in (("eu", "alone-a"), ("us", "alone-b")):
            mine = [r for r in found if r["cluster"] == cluster]
            assert without(mine, "snapshot_id", "cluster") == without(
                rows(fleet[alone], table), "snapshot_id", "cluster"
            )
    assert sorted((r["cluster"], r["snapshot_id"]) for r in rows(together, "snapshots")) == [
        ("eu", "hourly-2026102607"),
        ("us", "hourly-2026102607"),
    ]
    for cluster in ("eu", "us"):
        described = cli("describe", "--audit", str(together), "--cluster", cluster)
        assert described.exit_code == 0 and f"Snapshot hourly-2026102607 of cluster {cluster} " in described.output
    ambiguous = cli("describe", "--audit", str(together), "--snapshot-id", "hourly-2026102607")
    assert ambiguous.exit_code == 2 and ambiguous.output.count("\n") == 1
    assert "snapshot 'hourly-2026102607' under" in ambiguous.output and "is of 2 clusters" in ambiguous.output
    # eu judged again under the same id: its rows replaced, us's files left as they were.
    us_files = files_of(together / "group_verdicts", "us")
    before = {r["group_id"] for r in rows(together, "group_verdicts") if r["cluster"] == "us"}
    settings = load_settings(input_format="segments", cluster="eu", as_of="2026-11-01T00:00:00Z")
    run_audit(spark, [str(dumps["a"])], str(together), settings, snapshot_id="hourly-2026102607")
    found = rows(together, "group_verdicts")
    assert {r["group_id"] for r in found if r["cluster"] == "us"} == before
    assert {str(r["as_of"])[:10] for r in found if r["cluster"] == "eu"} == {"2026-11-01"}
    assert len([r for r in found if r["cluster"] == "eu"]) == len(rows(fleet["alone-a"], "group_verdicts"))
    assert us_files and files_of(together / "group_verdicts", "us") == us_files


def test_one_dump_without_a_cluster_id_judged_at_one_time_as_two_clusters_keeps_both(spark, dumps, tmp_path):
    """The same Kafka-source snapshot, judged at one as_of as eu and as us: the default ids are equal
    (they come from the dump and the time), and both snapshots stay."""
    together = tmp_path / "fleet"
    for cluster in ("eu", "us"):
        settings = load_settings(cluster=cluster, as_of="2026-10-27T04:00:00Z")
        run_audit(spark, [snapshot_dump(dumps, "a")], str(together), settings)
    listed = {(s.cluster, s.snapshot_id) for s in snapshots(str(together))}
    assert len(listed) == 2 and {c for c, _ in listed} == {"eu", "us"} and len({i for _, i in listed}) == 1
    eu = [r for r in rows(together, "partition_verdicts") if r["cluster"] == "eu"]
    us = [r for r in rows(together, "partition_verdicts") if r["cluster"] == "us"]
    assert eu and without(eu, "cluster") == without(us, "cluster")


def test_retention_of_one_id_shared_by_two_clusters_keeps_each_clusters_own(spark, dumps, tmp_path):
    """Both clusters name their snapshots s1 then s2: keeping one removes each cluster's s1 and leaves
    each one's s2; and a run's retention removes only its own cluster's snapshots."""
    together = tmp_path / "fleet"
    for snapshot_id, as_of in (("s1", "2026-10-26T00:00:00Z"), ("s2", "2026-10-27T00:00:00Z")):
        for name, cluster in (("a", "eu"), ("b", "us")):
            settings = load_settings(input_format="segments", cluster=cluster, as_of=as_of)
            run_audit(spark, [str(dumps[name])], str(together), settings, snapshot_id=snapshot_id)
    keep = load_settings(input_format="segments", cluster="eu", as_of="2026-10-28T00:00:00Z")
    keep = keep.replaced("output", keep_snapshots=KeepSnapshots(count=1))
    result = run_audit(spark, [str(dumps["a"])], str(together), keep, snapshot_id="s3")
    assert {(s.cluster, s.snapshot_id) for s in snapshots(str(together))} == {("eu", "s3"), ("us", "s1"), ("us", "s2")}
    removed = result.report.upkeep["removed"][0]
    assert removed["clusters"] == [{"cluster": "eu", "snapshot_ids": ["s1", "s2"], "kept": 1}]
    from offset_audit.views.summary import upkeep_lines

    assert "  removed 2 audit snapshots of cluster eu (s1 .. s2), 1 kept" in upkeep_lines(result.report.upkeep)
    tidied = cli("tidy", "--audit", str(together), "--keep-snapshots", "1", "--json")
    assert tidied.exit_code == 0, tidied.output
    assert {(s.cluster, s.snapshot_id) for s in snapshots(str(together))} == {("eu", "s3"), ("us", "s2")}
    for table in VERDICT_TABLES:
        assert {(r["cluster"], r["snapshot_id"]) for r in rows(together, table)} == {("eu", "s3"), ("us", "s2")}


def test_a_partition_another_engine_compacted_across_clusters_is_replaced_row_for_row(spark, dumps, tmp_path):
    """A snapshot's partition whose files another engine compacted into one (an OPTIMIZE of the folder):
    a cluster judged again replaces its rows and keeps the other's, rewriting the shared file."""
    together = tmp_path / "fleet"
    for name, cluster in (("a", "eu"), ("b", "us")):
        settings = load_settings(input_format="segments", cluster=cluster)
        run_audit(spark, [str(dumps[name])], str(together), settings, snapshot_id="shared")
    table = DeltaTable(str(together / "group_verdicts"))
    table.optimize.compact()
    assert len(DeltaTable(str(together / "group_verdicts")).file_uris()) == 1  # both clusters in one file
    us = without([r for r in rows(together, "group_verdicts") if r["cluster"] == "us"])
    listed = {(s.cluster, s.snapshot_id) for s in snapshots(str(together))}
    assert listed == {("eu", "shared"), ("us", "shared")}  # read from the file, not its statistics
    settings = load_settings(input_format="segments", cluster="eu", as_of="2026-11-01T00:00:00Z")
    run_audit(spark, [str(dumps["a"])], str(together), settings, snapshot_id="shared")
    found = rows(together, "group_verdicts")
    assert without([r for r in found if r["cluster"] == "us"]) == us
    assert {str(r["as_of"])[:10] for r in found if r["cluster"] == "eu"} == {"2026-11-01"}


def test_another_cluster_joins_a_folder_only_when_its_run_names_it(fleet, dumps, no_spark, tmp_path):
    """A folder belongs to the clusters its runs judged: an input of another cluster, or one that
    carries no id, is refused in one sentence before Spark starts unless --cluster names it, for full
    and incremental audits alike (docs/fleet.md)."""
    alone = str(fleet["alone-a"])  # cluster ID_A, unnamed
    for extra in ([], ["--incremental"], ["--full"]):
        refused = cli("audit", "--input", str(dumps["b"]), "--output", alone, *extra)
        assert refused.exit_code == 2 and refused.output.count("\n") == 1, refused.output
        assert f"holds the audits of cluster {ID_A}, and this input is cluster {ID_B}: give --cluster NAME" in (
            refused.output
        )
    without_id = cli("audit", "--input", snapshot_dump(dumps, "b"), "--output", alone)
    assert without_id.exit_code == 2 and "this input carries no cluster id: give --cluster NAME" in without_id.output
    into_fleet = cli("audit", "--input", snapshot_dump(dumps, "b"), "--output", str(fleet["fleet"]))
    assert into_fleet.exit_code == 2
    assert f"holds the audits of clusters {ID_A}, eu, and this input carries no cluster id" in into_fleet.output
    for command in (["whatif", "--retention-minutes", "1d"], ["decode"], ["history"]):
        refused = cli(*command, "--input", str(dumps["b"]), "--output", alone)
        assert refused.exit_code == 2 and f"and this input is cluster {ID_B}" in refused.output, command
    assert not (fleet["alone-a"] / "clusters").exists() and not (fleet["alone-a"] / "state").exists()


def test_history_of_a_cluster_the_folder_does_not_hold_names_the_clusters_it_does(fleet):
    unknown = cli("history", "--audit", str(fleet["fleet"]), "--cluster", "nosuch")
    assert unknown.exit_code == 2 and unknown.output.count("\n") == 1
    assert f"holds no audit of cluster nosuch (its clusters: {ID_A}, eu)" in unknown.output
    assert "clusters/nosuch" not in unknown.output


HOSTILE = "<script>window.pwned=1</script>"


def hostile_fleet() -> fleet_report.Fleet:
    """Two clusters whose newest audits hold a group named like a script, and a folder named like markup."""
    from datetime import UTC, datetime

    from offset_audit.views.audit_folder import Snapshot

    hostile = HOSTILE
    groups = pa.table(
        {
            "group_id": [hostile, "ok"],
            "group_type": ["classic", "classic"],
            "group_state": ["Empty", "Stable"],
            "member_count": [0, 2],
            "offset_count": [3, 1],
            "expired_offset_count": [3, 0],
            "next_expiry_at": [None, None],
            "next_expiry_at_ms": pa.array([None, None], pa.int64()),
            "would_delete": [True, False],
            "lag_total": pa.array([None, None], pa.int64()),
        }
    )
    as_of = datetime(2026, 1, 1, tzinfo=UTC)
    return fleet_report.Fleet(
        "<b>folder</b>",
        [
            fleet_report.FleetCluster(Snapshot("s1", as_of, 10080, None, "eu", "X"), 1, groups),
            fleet_report.FleetCluster(Snapshot("s2", as_of, 10080, None, "us", "Y"), 1, groups.slice(1)),
        ],
    )


def test_the_fleet_page_escapes_group_ids():
    fleet_ = hostile_fleet()
    html = fleet_report.render_fleet(fleet_).html
    assert HOSTILE not in html and "&lt;script&gt;window.pwned=1&lt;/script&gt;" in html
    assert "<b>folder</b>" not in html
    rows_ = fleet_report.cluster_rows(fleet_)
    assert [r["cluster"] for r in rows_] == ["eu", "us"]  # eu has the urgent group


def test_the_fleet_page_draws_its_chart_and_runs_no_name_in_chromium(tmp_path, chromium):
    page = tmp_path / "fleet.html"
    page.write_text(fleet_report.render_fleet(hostile_fleet()).html)
    chromium.load(page.as_uri())
    from browser import DRAWN_CHARTS

    assert chromium.wait_until(f"{DRAWN_CHARTS} === Number(document.body.dataset.charts)", timeout=20)
    assert chromium.evaluate("typeof window.pwned") == "undefined"
    assert HOSTILE in chromium.evaluate("document.body.innerText")
    assert chromium.problems() == []


def test_a_clusters_snapshots_are_one_cluster_under_its_id_its_name_or_both():
    """A cluster audited by name from a snapshot dump (no id), then from its broker folders (its id), and
    one audited under its id before it was named: each is one cluster, and --cluster finds all of it."""
    from datetime import UTC, datetime

    from offset_audit.views.audit_folder import Snapshot, by_cluster, of_cluster

    at = [datetime(2026, 1, day, tzinfo=UTC) for day in range(1, 6)]
    known = [
        Snapshot("s1", at[0], 10080, None, "eu", None),
        Snapshot("s2", at[1], 10080, None, ID_A, ID_A),
        Snapshot("s3", at[2], 10080, None, "eu", ID_A),
        Snapshot("s4", at[3], 10080, None, "us", None),
        Snapshot("s5", at[4], 10080, None, "", None),
    ]
    groups = {key: [s.snapshot_id for s in group] for key, group in by_cluster(known).items()}
    assert groups == {ID_A: ["s1", "s2", "s3"], "us": ["s4"], "": ["s5"]}
    assert [s.snapshot_id for s in of_cluster(known, "eu", "DIR")] == ["s1", "s2", "s3"]
    assert [s.snapshot_id for s in of_cluster(known, ID_A, "DIR")] == ["s1", "s2", "s3"]
    with pytest.raises(UserError, match=r"holds no snapshot of cluster nope \(its clusters: eu, us, \(unnamed\)\)"):
        of_cluster(known, "nope", "DIR")
