"""Pushing a snapshot's metrics to a Prometheus Pushgateway, as Prometheus' guidance for batch jobs has it.

A scrape of a node_exporter textfile needs a host the audit writes to; a scheduled job on a Spark
cluster or in a container often has none, and pushes instead. The push replaces everything earlier
pushed under the same job and grouping key (HTTP PUT, `push_to_gateway`), so the gateway holds exactly
the latest snapshot: series of groups that are gone disappear with the next push.

prometheus_client does the HTTP and the exposition (its label escaping included); the series are the
ones `views.prometheus` built, unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.error import URLError
from urllib.parse import urlsplit

from offset_audit.errors import UserError
from offset_audit.views.prometheus import Exposition

_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


@dataclass(frozen=True)
class Push:
    """Where to push: the gateway's URL, the job label and the grouping key's other labels."""

    url: str
    job: str
    grouping_key: dict[str, str] = field(default_factory=dict)

    def check(self) -> None:
        """Everything about the push that can be wrong before anything is read: one sentence each."""
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UserError(f"--push-gateway takes a Pushgateway's URL like http://pushgateway:9091, not '{self.url}'")
        if parts.path.strip("/") or parts.query:
            raise UserError(f"--push-gateway takes the Pushgateway's base URL, without a path: '{self.url}'")
        if not self.job:
            raise UserError("--push-job takes a job name, not an empty one")
        for name, value in self.grouping_key.items():
            if not _LABEL_NAME.match(name) or name == "job" or name.startswith("__"):
                raise UserError(f"--push-grouping-key takes a label name like cluster, not '{name}'")
            if not value:
                raise UserError(f"--push-grouping-key {name} needs a value (the Pushgateway refuses empty ones)")

    def check_clusters(self, exposition: Exposition) -> None:
        """A grouping key's cluster that is not the one cluster of the metrics: the gateway would hold
        one cluster's series under another's key (or reject them), and a later push of that cluster
        would replace them."""
        named = self.grouping_key.get("cluster")
        clusters = [c for c in exposition.cluster.split(",") if c]
        if named is not None and clusters and clusters != [named]:  # series without a cluster label take the key's
            shown = ", ".join(clusters)
            raise UserError(
                f"--push-grouping-key cluster={named} does not match the clusters of the metrics ({shown}): push "
                "each cluster with metrics --cluster NAME --push-grouping-key cluster=NAME"
            )

    def send(self, exposition: Exposition) -> None:
        from prometheus_client import CollectorRegistry, push_to_gateway

        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Snapshot(exposition))
        try:
            push_to_gateway(self.url, job=self.job, registry=registry, grouping_key=self.grouping_key, timeout=60)
        except (URLError, OSError) as err:
            reason = getattr(err, "reason", None) or err
            raise UserError(f"the Pushgateway at {self.url} did not take the metrics: {reason}") from err


class _Snapshot:
    """A prometheus_client collector that yields the exposition's families as they are."""

    def __init__(self, exposition: Exposition) -> None:
        self.exposition = exposition

    def collect(self) -> Iterator:
        from prometheus_client.metrics_core import Metric

        for family in self.exposition.families:
            metric = Metric(family.full_name, family.help, "gauge")
            for labels, value in family.samples:
                named = {name: str(v) for name, v in labels if v is not None}
                metric.add_sample(family.full_name, named, float(value))
            yield metric
