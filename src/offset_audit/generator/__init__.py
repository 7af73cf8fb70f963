"""Deterministic dumps for the demo, the tests and the bench: the same seed gives the same bytes.

    world      the cluster: topics, groups of every kind, and their keys and values as bytes
    classic    classic groups' GroupMetadata records, and deleted groups' tombstones
    consumer   KIP-848 consumer groups' records
    streams    streams groups' records
    share_world  share groups' records, and their state in __share_group_state
    commits    the offset commits, in time-ordered chunks
    corrupt    records a broken producer, disk or copy could leave
    demo_dump  the __consumer_offsets dump end to end (generate_dump)
    writers    Kafka-source snapshot files, log segments rewritten from them, end offsets
    snapshot_folder  an audit folder as a year of scheduled runs leaves it, without the runs

May import: the top-level modules, layouts, inputs, coordinator, outputs (the snapshot folder's tables are
written as a run writes them).
"""
