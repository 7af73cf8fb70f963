"""Each command end to end, and what every run needs: the SparkSession, the settings, progress on
stderr, and the checks made before Spark starts.

    decode       inputs -> decoding -> the decode tables
    state        the dump decoded and replayed into the coordinator's state (audit, whatif)
    audit        the state judged: partition and group verdicts, deletion candidates, the alerts
    incremental  audit --incremental: the state under the audit folder checked, resumed from, merged
    whatif       the state judged under other retentions and at other times
    history      the log replayed forward into offset_history
    share        KIP-932 share groups: share-partition state, cleanup, assignment, limits
    share_fast_replay   __share_group_state replayed in one Spark pass: read, decode and fold in the tasks
    share_replay     the record-by-record share replay in Spark, and the KIP-932 draft's control records
    snapshots    a snapshot's as_of (--as-of) and its id
    clusters     which cluster a run judges (meta.properties, the Admin API, --cluster), and its home
    upkeep       --keep-snapshots and tidy: old snapshots removed, every table compacted, vacuumed, checkpointed
    counts       what a run read, decoded, skipped and quarantined, filled in and checked to add up
    session      the one place a SparkSession is built (local, or spark-submit's), and the run's writer
    local_jvm    a local session's JVM options, and the class archive small runs map
    gateway      a local session's JVM started, its stderr passed on without the JDK's incubator warning
    config       the defaults, --conf and the flags -> Settings, each value checked
    progress     which stage runs, on stderr
    preflight    every check of options, paths and inputs that runs before Spark starts

The SparkSession is created here and passed in; every transformation it runs lives in the packages
above. A new command is a module here, a view for what it prints, and a click command in cli/.

May import: the top-level modules, layouts, inputs, decoding, coordinator, share_coordinator, outputs,
views.
"""
