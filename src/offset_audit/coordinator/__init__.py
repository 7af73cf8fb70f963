"""The broker's model, with no I/O: what the group coordinator holds after loading the log, and what its
expiry sweep and OffsetDelete would do with it. Pure functions of DataFrames (the decode tables).

    replay       decode tables -> the coordinator's groups and offsets (the last record of a key wins,
                 pending transactional commits set aside)
    rules        the broker's expiry and OffsetDelete rules, one named rule each, in the broker's order
    rule_names   the rules' and OffsetDelete answers' names, without Spark (views and runs read them)
    verdicts     per offset, per group, deletion candidates, what-if scenarios
    history      the log replayed forward: every commit, state change and deletion, with its cause
    events       offset_history's event and cause names
    retention_bound  the retentions every tombstone the sweep wrote agrees with
    partitioner  which __consumer_offsets partition holds a group

KIP-932 share groups, as the group coordinator holds them (`modern/share` in Kafka's group-coordinator):
    share_groups     the share group records (types 9-15), replayed as the coordinator loads them
    share_assignor   the target assignment 4.1's SimpleAssignor computes, and how a stored one compares
    share_balanced_assignor   the 4.2+ SimpleAssignor's balanced builders
    java_order       the JVM's HashMap and HashSet iteration, which the 4.2+ builders depend on
    share_limits     the group.share.* broker settings checked, and the groups measured against them
    share_findings   share_findings rows about groups: the stored assignment, the broker limits

A new broker rule goes in rules.py (and, if it changes what is loaded, replay.py).

May import: the top-level modules, layouts, decoding. Never inputs, outputs, views, runs or cli. (The
share limits name share_coordinator's StateBatch in type hints only.)
"""
