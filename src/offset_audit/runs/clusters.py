"""Which cluster a run judges: the name every row it writes carries (the tables' `cluster` column, the
metrics' `cluster` label), so one output folder can hold a fleet's audits and keep them apart.

The cluster's id comes from the input, in order: the broker folders' meta.properties (`cluster.id`), the
Kafka source's Admin API (DescribeCluster). A dump that carries neither (a Kafka-source snapshot, a text
dump) has none. `--cluster NAME` gives the name; without it the id is the name. A name given once names
its id in that folder from then on: a later run of the same cluster without --cluster takes it, and a
name or an id that would make one cluster two, or two clusters one, is refused before anything is
written. An id known only by itself until then may take a name: the read commands find its earlier
snapshots by the id.
"""

from __future__ import annotations

from dataclasses import dataclass

from offset_audit.errors import UserError
from offset_audit.inputs.opened import OpenedDump
from offset_audit.outputs.audit_state import read_state
from offset_audit.outputs.folder_layout import CLUSTERS
from offset_audit.settings import Settings, check_cluster_name
from offset_audit.storage import for_settings, join
from offset_audit.table_names import RUNS_TABLE
from offset_audit.views.audit_folder import has_table, read_table


@dataclass(frozen=True)
class Cluster:
    """A run's cluster: its name ("" when neither the input nor --cluster named one) and its id."""

    name: str
    cluster_id: str | None

    @property
    def label(self) -> str:
        return self.name or "(unnamed)"

    def same_as(self, other: Cluster) -> bool:
        """One cluster: by id where both have one, else by name."""
        if self.cluster_id and other.cluster_id:
            return self.cluster_id == other.cluster_id
        return self.name == other.name


# The live topic's cluster id before Spark starts, where the Python Kafka client cannot ask it: known
# only once Spark's Kafka source asks, and checked against the folder then.
UNKNOWN = "?"


def input_cluster_id(spark, dump: OpenedDump) -> str | None:
    """The id of the cluster the input comes from, where it tells: meta.properties beside the broker
    folders, or the live cluster's Admin API (UNKNOWN before Spark starts, where only Spark's client
    can ask it). Broker folders of two clusters in one run are refused."""
    settings = dump.settings
    if dump.format.broker_folders:
        found = dump.facts.cluster_id
    elif dump.format.live and spark is not None:
        from offset_audit.inputs.kafka_topic import cluster_id

        found = cluster_id(spark, settings)
    elif dump.format.live:  # before Spark: the Python client, where it is installed
        from offset_audit.inputs.kafka_end_offsets import ask_cluster_id

        found = ask_cluster_id(settings.kafka.bootstrap_servers, settings.kafka.options)
        if found is None:
            return UNKNOWN
    else:
        return None
    return _one(found)


def _one(found: str | None) -> str | None:
    """The input's one cluster id (folder_facts joins those of several data directories with commas)."""
    if found is not None and "," in found:
        raise UserError(
            f"the broker folders given belong to {found.count(',') + 1} clusters ({found.replace(',', ', ')}): "
            "audit each cluster in a run of its own"
        )
    return None if found is None else check_cluster_name(found, "the input's cluster id")


def named_clusters(output: str, settings: Settings) -> dict[str, str | None]:
    """The clusters the folder's runs judged: each name, with its id where one was known."""
    storage = for_settings(settings)
    if not has_table(output, RUNS_TABLE, storage):
        return {}
    rows = read_table(output, RUNS_TABLE, storage, columns=["cluster", "cluster_id"]).to_pylist()
    names: dict[str, str | None] = {}
    for row in rows:
        if row["cluster"]:
            names[row["cluster"]] = names.get(row["cluster"]) or row["cluster_id"]
    return names


UNASKED = object()


def resolve(spark, dump: OpenedDump, output: str, found: object = UNASKED) -> Cluster:
    """The run's cluster, checked against the clusters the folder already holds. `found`: the input's
    cluster id when the caller asked already (an incremental audit's input facts, the records an audit
    kept), else it is asked of the dump."""
    settings = dump.settings
    found = input_cluster_id(spark, dump) if found is UNASKED else _one(found)  # type: ignore[arg-type]
    if found == UNKNOWN:  # the live topic's id, before Spark: the run resolves its cluster again with it
        return Cluster(settings.input.cluster or "", None)
    cluster = _named(found, output, settings)
    if not settings.input.cluster:
        _check_owned(output, cluster, settings)
    return cluster


def _named(found: str | None, output: str, settings: Settings) -> Cluster:
    """The input's cluster by the name it is given, or has in the folder, or its id."""
    names = named_clusters(output, settings)
    given = settings.input.cluster
    if given:
        if found and names.get(given) and names[given] != found:
            raise UserError(
                f"--cluster {given} names cluster {names[given]} in '{output}', and this input is cluster {found}: "
                "give it a name of its own"
            )
        # An id named by itself until now may take a name; one named already keeps it.
        earlier = sorted(n for n, i in names.items() if found and i == found and n not in (given, found))
        if earlier:
            raise UserError(
                f"cluster {found} is named {earlier[0]} in '{output}': give --cluster {earlier[0]}, or leave it out"
            )
        return Cluster(given, found or names.get(given))
    if found:
        named = sorted(n for n, i in names.items() if i == found and n != found)
        return Cluster(named[0] if named else found, found)
    return Cluster("", None)


def folder_clusters(output: str, settings: Settings) -> list[Cluster]:
    """The clusters the folder's runs judged (a run written before fleets named none), and the one whose
    state it keeps: what owns it."""
    storage = for_settings(settings)
    found: list[Cluster] = []
    if has_table(output, RUNS_TABLE, storage):
        rows = read_table(output, RUNS_TABLE, storage, columns=["cluster", "cluster_id"]).to_pylist()
        for row in rows:
            if row["cluster"] is not None:
                found.append(Cluster(row["cluster"], row["cluster_id"]))
    stored = read_state(output, storage)
    if stored is not None and stored.cluster_id:
        found.append(Cluster(stored.cluster_id, stored.cluster_id))
    unique: list[Cluster] = []
    for cluster in found:
        if not any(cluster.same_as(u) or cluster.name == u.name for u in unique):
            unique.append(cluster)
    return unique


def _check_owned(output: str, cluster: Cluster, settings: Settings) -> None:
    """A folder belongs to the clusters its runs judged: another cluster joins it as a fleet only when
    its run names it with --cluster (docs/fleet.md), so that a dump of the wrong cluster, or one that
    carries no id, never turns a folder into a fleet unasked."""
    held = folder_clusters(output, settings)
    if not held or any(cluster.same_as(h) for h in held):
        return
    labels = ", ".join(sorted(h.label for h in held))
    this = f"is cluster {cluster.cluster_id}" if cluster.cluster_id else "carries no cluster id"
    raise UserError(
        f"'{output}' holds the audits of cluster{'s' if len(held) > 1 else ''} {labels}, and this input {this}: "
        "give --cluster NAME (the name of that cluster if it is one of them, a new name to add the input to the "
        "folder as a cluster of its own)"
    )


def judge_as(report, cluster: Cluster) -> None:
    """Note the run's cluster in its report: every snapshot row and the runs row carry it."""
    report.cluster, report.cluster_id = cluster.name, cluster.cluster_id


def home(output: str, cluster: Cluster, settings: Settings) -> str:
    """The folder of the cluster's own working tables: decoded/, and an incremental audit's state/ (the
    snapshot tables, runs and snapshots are the fleet's, with a cluster column).

    The cluster that first used the folder keeps them at DIR/decoded and DIR/state, as in a folder of
    one cluster (and as before fleets: a state written earlier belongs to the cluster whose id it
    holds); every other cluster's are under DIR/clusters/<name>/. Without a name, DIR/."""
    storage = for_settings(settings)
    own = join(output, CLUSTERS, cluster.name)
    if not cluster.name or storage.is_dir(own):
        return output if not cluster.name else own
    owner = _owner(output, settings)
    return output if owner is None or owner.same_as(cluster) else own


def _owner(output: str, settings: Settings) -> Cluster | None:
    """The cluster whose working tables are at DIR/ itself: the one of its state, else of its first run
    that named a cluster (an empty name included); None when neither tells (a new folder, or one of
    full audits written before fleets, whose decoded/ the next run replaces anyway)."""
    storage = for_settings(settings)
    stored = read_state(output, storage)
    if stored is not None:
        named = {i: n for n, i in named_clusters(output, settings).items()}
        return Cluster(named.get(stored.cluster_id, stored.cluster_id or ""), stored.cluster_id)
    if not has_table(output, RUNS_TABLE, storage):
        return None
    runs = read_table(output, RUNS_TABLE, storage, columns=["started_at", "cluster", "cluster_id"]).to_pylist()
    judged = sorted((r for r in runs if r["cluster"] is not None), key=lambda r: r["started_at"])
    return Cluster(judged[0]["cluster"], judged[0]["cluster_id"]) if judged else None


def fleet_homes(output: str, settings: Settings) -> list[str]:
    """The names under DIR/clusters/: the clusters whose working tables are kept apart."""
    storage = for_settings(settings)
    folder = join(output, CLUSTERS)
    return sorted(storage.entries(folder)) if storage.is_dir(folder) else []


def before_start(dump: OpenedDump, output: str) -> tuple[Cluster, str]:
    """The run's cluster and home as far as they are known before Spark starts (the Kafka source's id
    is asked through Spark): a name or an id that clashes with the folder's is refused here."""
    cluster = resolve(None, dump, output)
    return cluster, home(output, cluster, dump.settings)


def kept_home(audit_dir: str, settings: Settings) -> str:
    """The home whose state an existing audit folder keeps for --cluster (history --audit): the
    cluster's own folder, or DIR/ itself for the cluster that owns it. Without --cluster, a folder that
    keeps the states of several clusters is refused in one sentence."""
    name = settings.input.cluster
    others = fleet_homes(audit_dir, settings)
    if not name:
        if others:
            owner = _owner(audit_dir, settings)
            listed = ", ".join([*([owner.label] if owner is not None else []), *others])
            raise UserError(f"'{audit_dir}' keeps the state of more than one cluster ({listed}): give --cluster NAME")
        return audit_dir
    held = folder_clusters(audit_dir, settings)
    cluster = Cluster(name, named_clusters(audit_dir, settings).get(name))
    if not any(name in (h.name, h.cluster_id) for h in held):
        labels = ", ".join(sorted(h.label for h in held)) or "none named"
        raise UserError(f"'{audit_dir}' holds no audit of cluster {name} (its clusters: {labels})")
    if not any(name == h.name for h in held):  # given by its id: the name the folder knows it by
        cluster = next(Cluster(h.name, h.cluster_id) for h in held if name == h.cluster_id)
    return home(audit_dir, cluster, settings)
