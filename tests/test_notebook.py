"""examples/audit_with_the_api.ipynb runs as written, on the tests' local session (its getOrCreate finds
it): the dump written, read, audited, the what-if charted and the audit written to a folder."""

from __future__ import annotations

from deltalake import DeltaTable
from notebooks import notebook_code


def test_the_notebook_audits_charts_and_writes(spark, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OFFSET_AUDIT_NOTEBOOK_DUMP", str(tmp_path / "dump"))
    monkeypatch.setenv("OFFSET_AUDIT_NOTEBOOK_END_OFFSETS", str(tmp_path / "ends.txt"))
    monkeypatch.setenv("OFFSET_AUDIT_NOTEBOOK_OUTPUT", str(tmp_path / "kept"))
    space: dict = {}
    exec(compile(notebook_code(), "audit_with_the_api.ipynb", "exec"), space)
    assert space["spark"] is spark
    printed = capsys.readouterr().out
    assert "20,000 records read, 3 quarantined; reconciles: True" in printed
    assert list(space["table"]["retention_minutes"]) == [1440, 4320, 10080, 20160, 43200]
    expired = list(space["table"]["offsets_expired"])
    assert expired == sorted(expired, reverse=True) and expired[0] > expired[-1]
    (days, *_), names = space["figure"].data[0].x, [trace.name for trace in space["figure"].data]
    assert days == 1 and names == ["offsets_expired", "groups_deleted"]
    kept = DeltaTable(str(tmp_path / "kept" / "partition_verdicts")).to_pyarrow_table()
    assert kept.num_rows == space["audit"].result.offsets > 0
    assert not (tmp_path / "dump").samefile(tmp_path / "kept")
