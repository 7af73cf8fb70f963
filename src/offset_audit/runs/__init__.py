"""Each command end to end, one module per command (what every run needs, the SparkSession, the
settings, progress and the checks before Spark starts, is runtime/'s), and the helpers they share.

    decode       inputs -> decoding -> the decode tables
    state        the dump decoded and replayed into the coordinator's state (audit, whatif)
    audit        the state judged: partition and group verdicts, deletion candidates, the alerts
    incremental  audit --incremental: the state under the audit folder checked, resumed from, merged
    whatif       the state judged under other retentions and at other times
    history      the log replayed forward into offset_history
    share        KIP-932 share groups: share-partition state, cleanup, assignment, limits
    share_fast_replay   __share_group_state replayed in one Spark pass: read, decode and fold in the tasks
    share_state_reads  __share_group_state decoded one row a record, and the KIP-932 draft's control records read
    snapshots    a snapshot's as_of (--as-of, checked before Spark starts) and its id
    clusters     which cluster a run judges (meta.properties, the Admin API, --cluster), and its home
    upkeep       --keep-snapshots and tidy: old snapshots removed, every table compacted, vacuumed, checkpointed
    counts       what a run read, decoded, skipped and quarantined, filled in and checked to add up

The SparkSession is created in runtime/ and passed in; every transformation it runs lives in the
packages above. A new command is a module here, a view for what it prints, and a click command in cli/.

May import: the top-level modules, layouts, inputs, decoding, coordinator, share_coordinator, outputs,
views, runtime.
"""
