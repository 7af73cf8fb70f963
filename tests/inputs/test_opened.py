"""A dump is opened once: a run lists the dump's files once, before Spark starts, and every stage after
takes what that listing found (`inputs.opened`)."""

from __future__ import annotations

import glob
from collections import Counter
from pathlib import Path

import pytest

from offset_audit import api
from offset_audit.generator.demo_dump import generate_dump
from offset_audit.generator.writers import snapshot_to_segments
from offset_audit.storage import Storage

# The Storage primitives that list a folder, and the glob `kafka_source._expand` takes patterns with.
# Storage.files_under lists through Storage.listing: counted there once.
LISTINGS = ("listing", "entries", "file_sizes")


@pytest.fixture(scope="module")
def dumps(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("opened")
    generate_dump(str(root / "snapshot"), 800, seed=5, partitions=4)
    snapshot_to_segments(str(root / "snapshot"), str(root / "folders"), 3, "none", 16 << 10)
    return {"snapshot": root / "snapshot", "folders": root / "folders"}


@pytest.fixture
def listed(monkeypatch) -> Counter:
    """How often each path was listed (Storage.listing, entries, file_sizes, glob.glob)."""
    calls: Counter = Counter()
    for name in LISTINGS:
        original = getattr(Storage, name)

        def counting(self, path, _original=original):
            calls[str(path).rstrip("/")] += 1
            return _original(self, path)

        monkeypatch.setattr(Storage, name, counting)
    original_glob = glob.glob

    def counting_glob(pattern, *args, **kwargs):
        calls[str(pattern)] += 1
        return original_glob(pattern, *args, **kwargs)

    monkeypatch.setattr(glob, "glob", counting_glob)
    return calls


def _input_listings(calls: Counter, dump: Path) -> dict[str, int]:
    """The listings of the dump's own paths (the output's Delta tables are listed as outputs are)."""
    return {path: count for path, count in calls.items() if path.startswith(str(dump))}


def _listed_once(calls: Counter, dump: Path) -> None:
    seen = _input_listings(calls, dump)
    assert seen, "the run listed none of the dump's paths: the counting missed the listing"
    assert {path: n for path, n in seen.items() if n > 1} == {}, seen


def test_an_audit_of_broker_folders_lists_each_folder_once(spark, dumps, listed, tmp_path):
    api.audit(spark, str(dumps["folders"]), output=str(tmp_path / "audit"))
    _listed_once(listed, dumps["folders"])


def test_an_audit_of_a_snapshot_lists_its_folder_once(spark, dumps, listed, tmp_path):
    api.audit(spark, str(dumps["snapshot"]), output=str(tmp_path / "audit"))
    _listed_once(listed, dumps["snapshot"])


def test_an_incremental_audit_lists_the_broker_folders_once_per_run(spark, dumps, listed, tmp_path):
    output = str(tmp_path / "audit")
    first = api.audit(spark, str(dumps["folders"]), output=output, incremental=True)
    assert first.report.state == "first"
    _listed_once(listed, dumps["folders"])
    listed.clear()
    second = api.audit(spark, str(dumps["folders"]), output=output, incremental=True)
    assert second.report.state == "resumed"
    _listed_once(listed, dumps["folders"])
