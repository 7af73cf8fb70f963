"""Everything people and programs read, with no Spark: pure functions from finished results or an audit
folder's tables to text.

    summary          what the console prints after a run
    moments          a snapshot's as_of as text that --as-of takes back to the same moment
    describe         one snapshot in the shape of kafka-consumer-groups.sh --describe
    json_documents   what --json prints: one JSON document per command
    prometheus       an audited snapshot in Prometheus' text exposition format
    metric_scope     which series `metrics` writes: granularity, filters, a sample budget
    metric_series    the values of `metrics`' group, partition and group-and-topic series, a column each
    metric_text      Prometheus text built a column at a time with pyarrow.compute
    pushgateway      a snapshot's metrics pushed to a Prometheus Pushgateway
    html_report      the report page: charts and tables in one self-contained HTML file
    fleet_report     the report page of a folder of several clusters' audits: the clusters, urgent first
    report_numbers   the numbers the report page shows, from an audit folder's tables
    report_charts    the report page's plotly charts of those numbers
    kafka_commands   Kafka tool command lines built from names in the dump (delete plans, share groups)
    share_group_rows   the share_groups rows: each group, and the ones left behind with their delete command
    audit_folder     an audit's output folder read with delta-rs and pyarrow: snapshots, tables, the
                     deletion plan, sums that cannot overflow
    table_docs       docs/tables.md's table sections, from schemas/tables/
    settings_docs    conf/default.toml and docs/settings.md, from the settings' definitions

A new output format is a module here. Every name from the dump leaves through `escaping`, once per
medium. Nothing here imports pyspark, directly or through what it imports.

May import: the top-level modules, layouts, coordinator (its event and rule names and share groups, which
load no Spark), decoding (report: a run's counts, for type hints).
"""
