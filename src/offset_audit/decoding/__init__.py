"""Raw records become typed rows here: one row of a decode table per record, or a quarantine row.

    decoder      Arrow batches of raw records -> the rows of every decode table (offset_commits,
                 group_metadata, group_members, modern_group_records, other_records, quarantine), and
                 their DataFrame projections; the counts that must reconcile
    fast_commits offset commits (nearly all of a dump) read column-wise with numpy
    records      one record -> its row, through the layouts: the generic path, which never raises
    share_records   one __share_group_state record (ShareSnapshot, ShareUpdate) -> its row, never raising
    share_columns   __share_group_state values read column-wise with numpy, as fast_commits reads commits
    row_fields   a decoded record's fields whatever holds them (dict, dataclass, Spark Row)
    compaction   each decode task's last raw record per key, as the log cleaner would leave it
    kept_decoded the group records an incremental state keeps decoded, taken instead of decoding them again
    report       what a run read, decoded, skipped and quarantined (DecodeReport), and the key every
                 reader counts records by (CountKey); plain data, which the views read

A new record type or version is a file in schemas/records/ (read by layouts/) and its byte vectors in
tests/vectors/, not code here.

May import: the top-level modules, layouts, inputs.
"""
