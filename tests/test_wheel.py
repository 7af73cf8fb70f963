"""The package as users install it: `python -m build` makes the sdist, then the wheel from that sdist;
the wheel goes into a fresh venv outside the checkout, whose `offset-audit` runs the demo's commands
from a folder of its own, with nothing of the checkout on its path.

The build runs in a copy of the files git lists (tracked, and new ones it does not ignore): a build in
the checkout itself writes src/kafka_offset_audit.egg-info there, and reads the SOURCES.txt an older
build left in it, which puts files in the sdist and the wheel that the package-data settings no longer
name. `--no-isolation` builds with this venv's setuptools (the `test` extra pins what [build-system]
asks for), offline. The fresh venv gets the wheel alone (`pip install --no-deps --no-index`) and this
venv's site-packages for the dependencies, through a .pth line: a folder a .pth line adds is not a
site folder, so the .pth files in it, among them the editable install's, are not read.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from repo_paths import ROOT

pytestmark = pytest.mark.slow

PROJECT = "kafka-offset-audit"
# The folders of package data the package reads through importlib.resources.
DATA_FOLDERS = ("schemas", "conf")
# The demo's commands (the Makefile's `demo`), on a small dump: each starts its own Spark.
RECORDS = 3000


def source_version() -> str:
    """offset_audit.__version__ as src/offset_audit/__init__.py writes it."""
    tree = ast.parse((ROOT / "src" / "offset_audit" / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["__version__"]:
            return ast.literal_eval(node.value)
    raise AssertionError("src/offset_audit/__init__.py sets no __version__")


def copy_of_checkout(folder: Path) -> Path:
    """The files git lists (a symlink as a symlink), as a fresh clone with this checkout's edits holds them."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source, target = ROOT / name, folder / name
        if not os.path.lexists(source):  # deleted, not yet committed
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        else:
            shutil.copy2(source, target)
    return folder


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """The sdist, and the wheel built from it; and the copy of the checkout they were built from."""
    folder = tmp_path_factory.mktemp("wheel")
    checkout = copy_of_checkout(folder / "checkout")
    dist = folder / "dist"
    result = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(checkout)],
        capture_output=True,
        text=True,
        cwd=folder,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    sdists, wheels = sorted(dist.glob("*.tar.gz")), sorted(dist.glob("*.whl"))
    assert len(sdists) == 1 and len(wheels) == 1, sorted(p.name for p in dist.iterdir())
    return {"checkout": checkout, "sdist": sdists[0], "wheel": wheels[0]}


def package_data(checkout: Path) -> set[str]:
    """Every file under the package's data folders, relative to the package."""
    package = checkout / "src" / "offset_audit"
    files = {p.relative_to(package).as_posix() for f in DATA_FOLDERS for p in (package / f).rglob("*") if p.is_file()}
    assert {"schemas/records/01_offset_commit.json", "conf/default.toml", "conf/log4j2.properties"} <= files
    return files


def test_the_sdist_and_the_wheel_ship_every_file_of_schemas_and_conf(built):
    version = source_version()
    assert built["sdist"].name == f"kafka_offset_audit-{version}.tar.gz"
    assert built["wheel"].name == f"kafka_offset_audit-{version}-py3-none-any.whl"
    expected = package_data(built["checkout"])
    in_wheel = set(zipfile.ZipFile(built["wheel"]).namelist())
    assert sorted(name for name in expected if f"offset_audit/{name}" not in in_wheel) == [], "not in the wheel"
    top = f"kafka_offset_audit-{version}/src/offset_audit/"
    with tarfile.open(built["sdist"]) as sdist:
        in_sdist = {m.name for m in sdist.getmembers() if m.isfile()}
    assert sorted(name for name in expected if top + name not in in_sdist) == [], "not in the sdist"


def test_the_wheel_requires_what_pyproject_lists(built):
    """So that installing it with --no-deps, beside this venv's packages, hides no missing dependency."""
    from packaging.requirements import Requirement

    project = tomllib.loads((built["checkout"] / "pyproject.toml").read_text())["project"]
    expected = {str(Requirement(r)) for r in project["dependencies"]}
    for extra, requirements in project["optional-dependencies"].items():
        expected |= {str(Requirement(f'{r}; extra == "{extra}"')) for r in requirements}
    with zipfile.ZipFile(built["wheel"]) as wheel:
        metadata = Parser().parsestr(wheel.read(f"kafka_offset_audit-{source_version()}.dist-info/METADATA").decode())
    assert metadata["Name"] == PROJECT and metadata["Version"] == source_version()
    assert {str(Requirement(r)) for r in metadata.get_all("Requires-Dist")} == expected


@pytest.fixture(scope="module")
def installed(built, tmp_path_factory) -> Path:
    """A venv outside the checkout with the wheel installed in it, and this venv's packages importable."""
    venv = tmp_path_factory.mktemp("installed") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps", "--no-index"]
    result = subprocess.run([*pip, str(built["wheel"])], capture_output=True, text=True, env=environment())
    assert result.returncode == 0, result.stderr[-3000:]
    site = Path(run_python(venv, "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip())
    (site / "dependencies-of-this-test.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv


def environment() -> dict[str, str]:
    """This process's environment as a user's shell would have it: no PYTHONPATH, and nothing of the Spark
    this test run started (PYSPARK_PYTHON would run Spark's Python workers with this venv's Python). The
    warm session is not asked: one would run the command with its own code, not the installed wheel's."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith(("PYSPARK_", "SPARK_"))}
    return {**env, "OFFSET_AUDIT_WARM": "0"}


def run_python(
    venv: Path, code: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Python code run by the installed venv's interpreter, from a folder outside the checkout: where the
    package's API is called as a library would call it (the tests of the installed API go here too)."""
    result = subprocess.run(
        [str(venv / "bin" / "python"), "-c", code],
        capture_output=True,
        text=True,
        cwd=cwd or venv.parent,
        env={**environment(), **(env or {})},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def run_program(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The installed venv's `offset-audit` with these arguments."""
    result = subprocess.run(
        [str(venv / "bin" / "offset-audit"), *args], capture_output=True, text=True, cwd=cwd, env=environment()
    )
    assert result.returncode == 0, f"offset-audit {' '.join(args)}: {result.stderr[-3000:]}"
    return result


def test_the_installed_package_is_the_wheel_in_its_own_venv(installed):
    probe = (
        "import importlib.metadata, os, sys, offset_audit; from offset_audit.layouts.spec import schemas_dir;"
        "from offset_audit.runtime.config import DEFAULT_CONF;"
        "print(offset_audit.__file__); print(importlib.metadata.version('kafka-offset-audit'));"
        "print(schemas_dir()); print(DEFAULT_CONF.is_file());"
        "print(*[p for p in sys.path if os.path.isdir(os.path.join(p, 'offset_audit'))], sep=',')"
    )
    module, version, schemas, conf, found = run_python(installed, probe).stdout.splitlines()
    site = run_python(installed, "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip()
    assert module == f"{site}/offset_audit/__init__.py"
    assert found == site, f"offset_audit is also on the path at {found}"
    assert version == source_version()
    assert schemas == f"{site}/offset_audit/schemas" and conf == "True"


def test_the_installed_program_runs_the_demo_outside_the_checkout(installed, tmp_path):
    from deltalake import DeltaTable

    shown = run_program(installed, "--version", cwd=tmp_path)
    assert shown.stdout.strip() == f"offset-audit, version {source_version()}"
    run_program(
        installed,
        "generate",
        "--output",
        "in",
        "--records",
        str(RECORDS),
        "--seed",
        "7",
        "--end-offsets",
        "ends.txt",
        cwd=tmp_path,
    )
    run_program(installed, "audit", "--input", "in", "--output", "out", "--end-offsets", "ends.txt", cwd=tmp_path)
    run_program(
        installed, "whatif", "--input", "in", "--output", "out", "--retention-minutes", "1d,7d", "--quiet", cwd=tmp_path
    )
    run_program(installed, "report", "--audit", "out", "--output", "out/report.html", cwd=tmp_path)
    assert DeltaTable(str(tmp_path / "out" / "partition_verdicts")).to_pyarrow_table().num_rows > 0
    assert DeltaTable(str(tmp_path / "out" / "whatif")).to_pyarrow_table().num_rows > 0
    assert (tmp_path / "out" / "report.html").stat().st_size > 0


def test_the_installed_api_runs_the_notebook_on_a_session_of_its_own(installed, tmp_path):
    """examples/audit_with_the_api.ipynb's code, run by the installed venv's Python outside the checkout:
    it starts a plain local session, writes a small dump, audits it, compares retentions and writes an
    audit folder, which the installed program then reads, and whose tables equal the program's own audit."""
    from deltalake import DeltaTable
    from notebooks import notebook_code

    names = {"DUMP": "dump", "END_OFFSETS": "ends.txt", "OUTPUT": "kept"}
    printed = run_python(
        installed,
        notebook_code(),
        cwd=tmp_path,
        env={f"OFFSET_AUDIT_NOTEBOOK_{k}": str(tmp_path / v) for k, v in names.items()},
    ).stdout
    assert "20,000 records read, 3 quarantined; reconciles: True" in printed
    described = run_program(installed, "describe", "--audit", "kept", cwd=tmp_path).stdout
    assert "classic-empty" in described
    # The same audit by the installed program: its tables equal those the API wrote, row for row.
    run_program(installed, "audit", "--input", "dump", "--output", "cli", "--end-offsets", "ends.txt", cwd=tmp_path)
    for name in ("partition_verdicts", "group_verdicts", "deletion_candidates"):
        api_rows, cli_rows = (
            sorted(map(repr, DeltaTable(str(tmp_path / folder / name)).to_pyarrow_table().to_pylist()))
            for folder in ("kept", "cli")
        )
        assert api_rows and api_rows == cli_rows, name
