"""Every writer checks its path the same way before anything is read (runtime.preflight.check_output_path)
and writes whole: the output folder, the report page, the metrics file and the delete-plan script."""

from __future__ import annotations

import os
import stat

import pytest
from click.testing import CliRunner

from offset_audit.cli.main import main


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_the_script_is_written_whole_never_in_place(no_spark, audited, tmp_path):
    """A rename over the path: a reader of the old script (here a hard link to it) keeps the old one whole."""
    script, old = tmp_path / "plan.sh", tmp_path / "old-plan.sh"
    script.write_text("echo old\n")
    os.link(script, old)
    result = run("delete-plan", "--audit", audited, "--script", script)
    assert result.exit_code == 0, result.output
    assert old.read_text() == "echo old\n"
    assert script.read_text().startswith("#!") and "--delete-offsets" in script.read_text()


def test_a_symlink_at_the_script_path_is_replaced_not_written_through(no_spark, audited, tmp_path):
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me\n")
    script = tmp_path / "plan.sh"
    script.symlink_to(precious)
    result = run("delete-plan", "--audit", audited, "--script", script)
    assert result.exit_code == 0, result.output
    assert precious.read_text() == "keep me\n"
    assert not script.is_symlink() and "--delete-offsets" in script.read_text()


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o755), (0o077, 0o700), (0o027, 0o750)])
def test_the_script_is_executable_as_far_as_the_umask_lets_files_be(no_spark, audited, tmp_path, umask, mode):
    script = tmp_path / "plan.sh"
    previous = os.umask(umask)
    try:
        result = run("delete-plan", "--audit", audited, "--script", script)
    finally:
        os.umask(previous)
    assert result.exit_code == 0, result.output
    assert stat.S_IMODE(script.stat().st_mode) == mode


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["delete-plan", "--script", "/proc/plan.sh"], "--script"),
        (["metrics", "--output", "/proc/offset_audit.prom"], "--output"),
        (["report", "--output", "/proc/report.html"], "--output"),
    ],
    ids=["script", "metrics", "report"],
)
def test_a_folder_root_cannot_write_in_is_refused_before_anything_is_read(no_spark, audited, argv, option):
    """os.access says yes to root for /proc; a real file created there says no."""
    result = run(argv[0], "--audit", audited, *argv[1:])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {option} /proc/") and "cannot be written: /proc: " in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("argv", "name"),
    [(["delete-plan", "--script"], "plan.sh"), (["metrics", "--output"], "x.prom"), (["report", "--output"], "r.html")],
    ids=["script", "metrics", "report"],
)
def test_a_pipe_or_a_device_at_a_file_path_is_refused(no_spark, audited, tmp_path, argv, name):
    """Renaming over a device node would replace it; opening a pipe would wait for a reader forever."""
    pipe = tmp_path / name
    os.mkfifo(pipe)
    result = run(argv[0], "--audit", audited, argv[1], pipe)
    assert result.exit_code == 2, result.output
    assert "is not a regular file (a device or a pipe)" in result.stderr
    assert stat.S_ISFIFO(pipe.stat().st_mode)


def test_the_output_folder_of_a_run_gets_the_same_check(no_spark, small_dump, tmp_path):
    result = run("decode", "--input", small_dump, "--output", "/proc/decoded")
    assert result.exit_code == 2, result.output
    assert result.stderr == "error: --output /proc/decoded cannot be written: /proc: No such file or directory\n"


@pytest.fixture(scope="module")
def small_dump(tmp_path_factory):
    from offset_audit.generator.demo_dump import generate_dump

    folder = tmp_path_factory.mktemp("small") / "dump"
    generate_dump(str(folder), 300, seed=5)
    return str(folder)
