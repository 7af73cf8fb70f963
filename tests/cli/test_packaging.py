"""The zip for spark-submit --py-files carries the layouts and table schemas the workers read."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

from repo_paths import ROOT

JOBS = ROOT / "jobs"


def test_package_imports_and_reads_its_schemas_from_the_zip(tmp_path):
    spec = importlib.util.spec_from_file_location("package_py_files", JOBS / "package_py_files.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    archive = module.build(tmp_path / "offset_audit.zip")
    import zipfile

    names = zipfile.ZipFile(archive).namelist()
    # This machine's bytecode and numba caches stay out: stale ones (of older walker versions) made it 1.7 MiB.
    assert "offset_audit/inputs/segments/fast_walk.py" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith((".pyc", ".nbi", ".nbc"))]
    probe = (
        "import offset_audit, sys; assert offset_audit.__file__.startswith(sys.argv[1]), offset_audit.__file__;"
        "from offset_audit.layouts.spec import record_layouts, share_state_layouts;"
        "from offset_audit.layouts.tables import table_schema;"
        "from offset_audit.runtime.config import load_settings;"
        "print(len(record_layouts()), len(share_state_layouts()), len(table_schema('offset_commits').columns),"
        "load_settings().input.topic)"
    )
    result = subprocess.run(
        [sys.executable, "-S", "-c", probe, str(archive)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": f"{archive}:{':'.join(p for p in sys.path if 'site-packages' in p)}"},
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["23", "2", "20", "__consumer_offsets"]
