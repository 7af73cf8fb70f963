"""Kafka tool command lines built from names in the dump, for the scripts and commands the tool prints.

Every value from the dump is one inert shell word passed as `--name=VALUE`: quoted (`escaping.shell_word`),
so no character runs anything, and glued to its option, so a group named `--all-groups` is the value of
--group and never an option of its own (the tools parse options with jopt-simple, which reads
`--name=value`). The bootstrap server is written as the operator gave it: it is their own shell word,
`"$BOOTSTRAP_SERVER"` by default, expanded when the script runs.
"""

from __future__ import annotations

from offset_audit.escaping import shell_word

CONSUMER_GROUPS = "kafka-consumer-groups.sh"
SHARE_GROUPS = "kafka-share-groups.sh"
DEFAULT_BOOTSTRAP = '"$BOOTSTRAP_SERVER"'


def kafka_command(tool: str, bootstrap: str, action: str, values: list[tuple[str, str]]) -> str:
    """`tool --bootstrap-server BOOTSTRAP --action --name=VALUE ...`; raises escaping.NotAShellArgument
    for a value no command line can carry (a NUL)."""
    words = [tool, "--bootstrap-server", bootstrap, f"--{action}"]
    words += [f"--{name}={shell_word(value)}" for name, value in values]
    return " ".join(words)


def delete_offsets(group_id: str, partitions_by_topic: dict[str, list[int]], bootstrap: str) -> str:
    """kafka-consumer-groups.sh --delete-offsets for some partitions of some topics of one group."""
    topics = [
        ("topic", f"{topic}:{','.join(str(p) for p in sorted(partitions))}")
        for topic, partitions in sorted(partitions_by_topic.items())
    ]
    return kafka_command(CONSUMER_GROUPS, bootstrap, "delete-offsets", [("group", group_id), *topics])


def delete_share_group(group_id: str, bootstrap: str) -> str:
    """kafka-share-groups.sh --delete for one share group."""
    return kafka_command(SHARE_GROUPS, bootstrap, "delete", [("group", group_id)])
