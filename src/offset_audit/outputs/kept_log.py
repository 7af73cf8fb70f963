"""The records incremental audits kept in DIR/state/log, read back as a dump for history --audit
(docs/incremental.md).

One generation of the log at a time: a recreated topic numbers its offsets from 0 again, and history
orders events by their offsets. The state's transactional records still waiting for a marker join the
generation its runs are appending to, as the pending records a full read would show. A record appears
once, whatever the log holds: a run killed after its append and before its positions leaves records the
next run appends again, and a pending record of the state may already be in the log, settled; the
settled copy is the one read.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from offset_audit.errors import UserError
from offset_audit.inputs.parquet_files import read_parquet_files
from offset_audit.inputs.resumed import LOG_SCHEMA
from offset_audit.outputs.audit_state import LOG, StoredLog, StoredState, pending_records, read_log, read_state
from offset_audit.storage import LOCAL, Storage, join

# state/log's file columns as Spark reads them (schemas/tables/state_log.json).
_FILE = from_arrow_schema(LOG_SCHEMA)


@dataclass(frozen=True)
class KeptLog:
    """What history --audit reads: a generation of state/log, and the state beside it."""

    audit: str
    log: StoredLog
    generation: int
    state: StoredState | None

    @property
    def path(self) -> str:
        return join(self.audit, LOG)

    @property
    def records(self) -> int:
        return self.log.records.get(self.generation, 0)

    @property
    def input_format(self) -> str:
        return (self.state.input_format if self.state is not None else None) or "segments"


def kept_log(audit: str, generation: int | None = None, storage: Storage = LOCAL) -> KeptLog:
    """The log under the audit folder `audit`, checked before Spark starts: one sentence when there is
    none, or no such generation."""
    stored = read_log(audit, storage)
    if stored.version is None:
        raise UserError(
            f"'{audit}' holds no {LOG}: only audit --incremental keeps one (with [audit] keep_log, the default)"
        )
    chosen = stored.generation if generation is None else generation
    if chosen not in stored.files:
        kept = ", ".join(str(g) for g in sorted(stored.files))
        raise UserError(f"{LOG} in '{audit}' has no generation {chosen}; it has {kept}")
    return KeptLog(audit, stored, chosen, read_state(audit, storage))


def kept_records(spark: SparkSession, kept: KeptLog, topic: str, storage: Storage = LOCAL) -> DataFrame:
    """The generation's records as raw records for the decoder, each once."""
    frames = [
        read_parquet_files(spark, list(kept.log.files[kept.generation]), _FILE, storage).withColumn(
            "_pending", F.lit(False)
        )
    ]
    if kept.generation == kept.log.generation and kept.state is not None:
        pending = spark.createDataFrame(pending_records(kept.state, storage), schema=_FILE)
        frames.append(pending.withColumn("_pending", F.lit(True)))
    union = frames[0]
    for frame in frames[1:]:
        union = union.unionByName(frame)
    columns = [f.name for f in _FILE.fields if f.name not in ("source_partition", "source_offset")]
    once = union.groupBy("source_partition", "source_offset").agg(
        *(F.min_by(F.col(c), F.col("_pending")).alias(c) for c in columns)
    )
    return once.select(
        F.lit(topic).alias("source_topic"),
        "source_partition",
        "source_offset",
        "record_timestamp_ms",
        "key",
        "value",
        "transaction",
    )
