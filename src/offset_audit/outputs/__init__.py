"""Every table and file the job writes (Delta tables, the Parquet it keeps for itself, the runs rows, the
files the read commands write), and how the job reads its own tables back.

    delta        a DataFrame or an Arrow table written as a Delta table, by one of two routes behind one
                 function: format("delta") where the session has delta-spark, else Parquet files written
                 by the tasks and committed by delta-rs
    fast_write   the decode pass that writes its own files: each task decodes and writes, the driver commits
    snapshot_tables   a snapshot's rows of a table replaced in one commit, and read back; its row in the
                 snapshots table (merged), which the read commands list snapshots from
    table_upkeep rows deleted in one commit, small files compacted, vacuum and checkpoints, by either writer
    runs_table   the runs table: each run's row, appended last
    text_files   the delete script, report page and metrics file, each written whole
    scratch      a run's scratch folder in the output, what it holds (the latest commits merged on the
                 driver), and the clearing of what dead runs left behind
    share_tables the share tables shaped in Arrow from the replay's rows
    read_back    a Delta table this project wrote, read back as a DataFrame (with or without Delta's jars)
    audit_state  an incremental audit's state: the records it carries, its positions, their lock, and the
                 log of every record the runs read
    kept_log     that log read back as a dump, each record once, for history --audit
    folder_layout where an audit folder keeps its tables, and the list of them upkeep works on
    run_copy     a run's tables written again into another audit folder or catalog tables (api.write)

A new output table is a file in schemas/tables/ (its columns, documented in docs/tables.md) and a call
to delta.write_delta or delta.write_arrow from the run that fills it, with the run's TableWriter (chosen
once when the run starts: runtime.session.table_writer). No other package writes a table or a file.

May import: the top-level modules, layouts, inputs, decoding.
"""
