"""Offset commits, the bulk of a dump: produced in time-ordered chunks so memory stays bounded for
tens of millions of records, with offsets that only grow per partition."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from offset_audit.generator.world import END_MS, SPAN_MS, Event, Group, World

CHUNK = 500_000


def commit_chunks(
    world: World, total: int, tips: dict[tuple[str, int], list[int]] | None = None
) -> Iterator[list[Event]]:
    """Offset commits in time order, chunk by chunk, with offsets that only grow per partition. Once
    the last chunk is out, `tips` holds every committed topic partition's last offset of each key."""
    rng = world.np_rng
    committing = [g for g in world.groups if g.kind not in ("share",)]
    keys: list[tuple[Group, str, int]] = [(g, t, p) for g in committing for t, n in g.topics.items() for p in range(n)]
    # Most commit traffic comes from a minority of busy groups.
    weights = rng.pareto(1.5, len(keys)) + 0.05
    weights /= weights.sum()
    encoded_keys = [world.commit_key(g, t, p) for g, t, p in keys]
    offsets = rng.integers(0, 1 << 20, len(keys)).astype(np.int64)
    # A few partitions carry offsets beyond 2^53, where a double would lose digits.
    offsets[:: max(1, len(keys) // 5)] += 1 << 54
    start = END_MS - SPAN_MS
    done = 0
    committed_keys = np.zeros(len(keys), bool)
    while done < total:
        m = min(CHUNK, total - done)
        lo = start + (END_MS - start) * done // total
        hi = start + (END_MS - start) * (done + m) // total
        ts = np.sort(rng.integers(lo, max(hi, lo + 1), m))
        which = rng.choice(len(keys), m, p=weights)
        increments = rng.integers(1, 2000, m)
        order = np.lexsort((ts, which))
        sorted_which = which[order]
        cumulative = np.cumsum(increments[order])
        group_start = np.r_[0, np.flatnonzero(np.diff(sorted_which)) + 1]
        base = np.repeat(cumulative[group_start] - increments[order][group_start], np.diff(np.r_[group_start, m]))
        committed = np.empty(m, np.int64)
        committed[order] = offsets[sorted_which] + cumulative - base
        np.maximum.at(offsets, which, committed)
        committed_keys[which] = True
        events = []
        for i in range(m):
            group, topic, _ = keys[which[i]]
            metadata = "x" * 150 if which[i] % 97 == 0 else ("ckpt" if which[i] % 13 == 0 else "")
            events.append(
                Event(
                    int(ts[i]),
                    group.partition,
                    encoded_keys[which[i]],
                    world.commit_value(group, topic, int(committed[i]), int(ts[i]), metadata),
                )
            )
        done += m
        yield events
    if tips is not None:
        for k in np.flatnonzero(committed_keys):
            _, topic, partition = keys[k]
            tips.setdefault((topic, partition), []).append(int(offsets[k]))
