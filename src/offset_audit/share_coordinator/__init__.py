"""The share coordinator's model, with no I/O: the share-partition state Kafka's share coordinator
rebuilds from `__share_group_state` (KIP-932), beside the group coordinator as Kafka's `share-coordinator`
module sits beside `group-coordinator`.

    share_partition  one share-partition's replay, rule for rule as Kafka 4.1's ShareCoordinatorShard
    cover            state merges over numpy arrays (which batch covers each offset)
    fold             a task's records folded per share-partition, the folds combined on the driver
    state_replay     the replays as Spark passes: per share-partition, its records in log order -> the
                     share tables' rows (record by record, or the draft's chain)
    draft_chain      the KIP-932 draft's checkpoint and delta chains
    state_findings   what the replayed state says about the brokers that wrote it

A new share-state record version is a layout in schemas/share_state/ and its vectors (decoded in
decoding/share_records); a new rule of the replay goes in share_partition (and fold, which must agree).

May import: the top-level modules, layouts, decoding. Never the group coordinator, which stands beside it
(what both need, the broker versions and the share_findings row, sits among the top-level modules).
"""
