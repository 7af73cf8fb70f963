"""`offset-audit generate`: a realistic, deterministic dump for demos, tests and benches (generator/)."""

from __future__ import annotations

import click

from offset_audit.cli.options import user_errors
from offset_audit.errors import UserError
from offset_audit.escaping import terminal


@click.command()
@click.option("--output", required=True, metavar="PATH", help="folder for the dump.")
@click.option("--records", default=100_000, show_default=True, type=click.IntRange(min=1))
@click.option("--seed", default=1, show_default=True, type=int)
@click.option(
    "--corrupt",
    default=0,
    show_default=True,
    type=click.IntRange(min=0),
    help="how many corrupt or unknown records to mix in.",
)
@click.option(
    "--partitions",
    default=10,
    show_default=True,
    type=click.IntRange(min=1),
    help="__consumer_offsets partition count (offsets.topic.num.partitions).",
)
@click.option(
    "--topic-scale",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="multiply every topic's partition count (1 to 24) by this, for a cluster whose groups hold many more "
    "offsets: at 20M records, 30 gives millions of live offsets.",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["parquet", "segments", "share-state"]),
    default="parquet",
    show_default=True,
    help="a Kafka-source snapshot of __consumer_offsets, a broker data directory of __consumer_offsets-N/*.log "
    "segments, or a Kafka-source snapshot of __share_group_state for the share groups of the same cluster.",
)
@click.option(
    "--cluster-records",
    default=None,
    type=click.IntRange(min=1),
    help="with --format share-state: the --records of the __consumer_offsets dump whose share groups to use "
    "(default: --records).",
)
@click.option(
    "--compression",
    type=click.Choice(["none", "gzip", "snappy", "lz4", "zstd"]),
    default="none",
    show_default=True,
    help="with --format segments: the batches' codec.",
)
@click.option(
    "--batch-records",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="with --format segments: records per batch (the coordinator writes most records one per batch).",
)
@click.option(
    "--segment-bytes",
    default=None,
    type=click.IntRange(min=1),
    metavar="BYTES",
    help="with --format segments: roll a new segment file where one would pass this many bytes, as the broker "
    "does at the topic's segment.bytes (default 104857600, __consumer_offsets' own).",
)
@click.option(
    "--stage",
    default=None,
    metavar="K/N",
    help="with --format segments: write the log as it stood at stage K of N as it grew: each partition's records "
    "among the first K/N of the dump's, whole batches only, in the same segment files as the whole log (the "
    "earlier ones byte for byte, the last one shorter, the later ones not yet rolled). Write the stages one after "
    "the other into one --output to try audit --incremental on a log that grows (docs/incremental.md).",
)
@click.option(
    "--end-offsets",
    "end_offsets_file",
    default=None,
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="also write what kafka-get-offsets.sh (--time -1) would print for the generated cluster: the log end "
    "offset of every partition with committed offsets, for audit --end-offsets.",
)
@click.option(
    "--start-offsets",
    "start_offsets_file",
    default=None,
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="also write the log start offsets (kafka-get-offsets.sh --time -2), a few above committed offsets.",
)
@click.option(
    "--cluster-id",
    default=None,
    metavar="ID",
    help="with --format segments: the cluster the data directory belongs to, written to its meta.properties "
    "as a broker writes it (audit takes the cluster from there; docs/fleet.md).",
)
@user_errors
def generate(
    output: str,
    records: int,
    seed: int,
    corrupt: int,
    partitions: int,
    topic_scale: int,
    output_format: str,
    cluster_records: int | None,
    compression: str,
    batch_records: int,
    segment_bytes: int | None,
    stage: str | None,
    end_offsets_file: str | None,
    start_offsets_file: str | None,
    cluster_id: str | None,
) -> None:
    """Write a realistic, deterministic dump of __consumer_offsets (Parquet snapshot or log segments), or of
    __share_group_state for the same cluster's share groups."""
    import tempfile

    from offset_audit.generator.demo_dump import generate_dump
    from offset_audit.generator.share_world import generate_share_state
    from offset_audit.generator.writers import snapshot_to_segments, write_meta_properties

    offsets_files = {"end_offsets": end_offsets_file, "start_offsets": start_offsets_file}
    stage_of = _stage(stage) if stage is not None else None
    if output_format != "segments" and (stage is not None or segment_bytes is not None):
        raise UserError("--stage and --segment-bytes go with --format segments (a broker's data directory)")
    if stage_of is not None and (end_offsets_file or start_offsets_file):
        raise UserError("--end-offsets and --start-offsets tell of the whole log; give them without --stage")
    if cluster_id is not None:
        from offset_audit.settings import check_cluster_name

        if output_format != "segments":
            raise UserError("--cluster-id goes with --format segments (a broker's data directory)")
        check_cluster_name(cluster_id, "--cluster-id")
    if output_format == "share-state":
        if end_offsets_file or start_offsets_file:
            raise UserError("--end-offsets and --start-offsets go with --format parquet or segments")
        if topic_scale != 1:
            raise UserError("--topic-scale goes with --format parquet or segments")
        result = generate_share_state(
            output, records, seed=seed, world_records=cluster_records or records, partitions=partitions, corrupt=corrupt
        )
        click.echo(
            f"wrote {result['records']:,} __share_group_state records of {result['share_partitions']:,} "
            f"share-partitions in {result['partitions']} partitions to {terminal(output)}"
        )
        return
    if output_format == "parquet":
        result = generate_dump(
            output, records, seed=seed, corrupt=corrupt, partitions=partitions, topic_scale=topic_scale, **offsets_files
        )
        where = f"({result['files']} Parquet files)"
    else:
        with tempfile.TemporaryDirectory() as snapshot:
            result = generate_dump(
                snapshot, records, seed=seed, corrupt=corrupt, partitions=partitions, topic_scale=topic_scale,
                **offsets_files,
            )  # fmt: skip
            written = snapshot_to_segments(snapshot, output, batch_records, compression, segment_bytes, stage=stage_of)
        if cluster_id is not None:
            write_meta_properties(output, cluster_id)
        codec = "uncompressed" if compression == "none" else f"{compression}-compressed"
        where = f"({written['segments']} segment files, {codec} batches)"
        if stage_of is not None:
            k, n = stage_of
            click.echo(
                f"wrote stage {k}/{n} of a {result['records']:,}-record log: {written['records']:,} records of "
                f"{result['groups']:,} groups in {result['partitions']} __consumer_offsets partitions to "
                f"{terminal(output)} {where}"
            )
            return
    click.echo(
        f"wrote {result['records']:,} records of {result['groups']:,} groups in {result['partitions']} "
        f"__consumer_offsets partitions to {terminal(output)} {where}"
    )
    for path in (end_offsets_file, start_offsets_file):
        if path:
            click.echo(f"wrote the offsets of {result['offset_partitions']:,} topic partitions to {terminal(path)}")


def _stage(text: str) -> tuple[int, int]:
    """--stage's K/N."""
    k, _, n = text.partition("/")
    if not (k.strip().isdigit() and n.strip().isdigit()) or not 1 <= int(k) <= int(n):
        raise UserError(f"--stage takes K/N with 1 <= K <= N, as 2/5, not '{terminal(text)}'")
    return int(k), int(n)
