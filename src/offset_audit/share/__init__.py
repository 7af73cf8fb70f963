"""KIP-932 share groups: the share-partition state Kafka's share coordinator rebuilds, the groups the
group coordinator holds, their assignment and the broker's limits (`offset-audit share`).

    state      one share-partition's replay, rule for rule as Kafka 4.1's ShareCoordinatorShard
    records    one __share_group_state record (ShareSnapshot, ShareUpdate) to its row
    columns    __share_group_state values read column-wise with numpy
    fold       a task's records folded per share-partition, the folds combined on the driver
    cover      state merges over numpy arrays (which batch covers each offset)
    onepass    the one Spark pass: read, decode and fold in the tasks
    job        the record-by-record route, and the KIP-932 draft's control records
    chain      the KIP-932 draft's checkpoint and delta chains
    groups     share groups from __consumer_offsets (types 9-15), replayed as the coordinator loads them
    group_table     the share_groups rows: each group, and the ones left behind with their delete command
    group_findings  share_findings about groups: the stored assignment, the broker limits
    assignor   the target assignment 4.1's SimpleAssignor computes, and how a stored one compares
    balanced_assignor  the 4.2+ SimpleAssignor's balanced builders
    java_order the JVM's HashMap and HashSet iteration, which the 4.2+ builders depend on
    limits     the group.share.* broker settings, checked, and the groups measured against them
    state_findings  what the replayed state says about the brokers that wrote it
    tables     the share tables shaped in Arrow

May import: the top-level modules, layouts, inputs, decoding, coordinator, views (kafka_commands: the
share_groups table stores the command that deletes a group).
"""
