"""The command line: click commands only. Flags become settings, then a run or a view is called.

    main            the offset-audit group and its commands
    options         what the commands share, declared once: user errors as one sentence and exit 2, the
                    dump options (building one Dump: paths and Settings), the audit-folder options
    run_commands    the commands that read a dump and run Spark: decode, audit, whatif, history, share
    read_commands   the commands that read an audit folder, no Spark: describe, delete-plan, report, metrics
    tidy_command    tidy: snapshot retention and table upkeep of an output folder, no Spark
    generate        generate: a deterministic dump for demos, tests and benches
    warm_commands   warm start | status | stop: a Spark session kept warm between runs
    entry           the offset-audit program: the warm session runs the command if it can, else main
    docs            for maintainers: the docs generated from the code (shown outputs, table sections)

Nothing outside cli/ parses flags; jobs/ (spark-submit) calls main.

May import: the top-level modules, layouts, inputs, decoding, coordinator, share_coordinator, outputs, views,
runtime, runs, generator, warm, api.
"""
