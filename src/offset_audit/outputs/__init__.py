"""Where tables leave the job (Delta Lake), and how the job reads its own tables back.

    delta        a DataFrame or an Arrow table written as a Delta table, by one of two routes behind one
                 function: format("delta") where the session has delta-spark, else Parquet files written
                 by the tasks and committed by delta-rs
    fast_write   the decode pass that writes its own files: each task decodes and writes, the driver commits
    scratch      a run's scratch folder in the output, and the clearing of what dead runs left behind
    share_tables the share tables shaped in Arrow from the replay's rows
    read_back    a Delta table this project wrote, read back as a DataFrame (with or without Delta's jars)

A new output table is a file in schemas/tables/ (its columns, documented in docs/tables.md) and a call
to delta.write_delta or delta.write_arrow from the run that fills it.

May import: the top-level modules, layouts, inputs, decoding.
"""
