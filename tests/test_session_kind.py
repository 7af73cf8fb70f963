"""Classic and Spark Connect sessions told apart, and the routes beside each other: `connect_route` sends a
call with a remote session to its Connect route, the Python tasks' Connect route (a range and mapInArrow,
which a classic session runs too) gives what parallelize gives, and a run given a server is checked before
anything starts."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from offset_audit.cli.main import main
from offset_audit.errors import UserError
from offset_audit.python_tasks import _on_connect, cut, run_tasks
from offset_audit.runtime.progress import ServerProgress
from offset_audit.runtime.session import check_remote
from offset_audit.session_kind import connect_route, is_remote, is_session


class RemoteSession:
    """Stands in for pyspark.sql.connect.session.SparkSession: what is_remote looks at is the class."""


RemoteSession.__module__ = "pyspark.sql.connect.session"
RemoteSession.__name__ = "SparkSession"


def test_a_connect_session_is_told_apart_by_its_class(spark):
    remote = RemoteSession()
    assert is_remote(remote) and is_session(remote)
    assert not is_remote(spark) and is_session(spark)
    assert not is_session("sc://127.0.0.1:15002")


def test_a_marked_function_sends_a_remote_sessions_call_to_its_connect_route(spark):
    def on_connect(session, n):
        return ("connect", n)

    @connect_route(on_connect)
    def count(session, n):
        return ("classic", n)

    class Reader:
        def __init__(self, session):
            self.spark = session

    assert count(spark, 1) == ("classic", 1)
    assert count(RemoteSession(), 2) == ("connect", 2)
    assert count(Reader(RemoteSession()), n=3) == ("connect", 3)  # a session held as .spark
    assert count.connect_route is on_connect


def test_the_python_tasks_connect_route_gives_what_parallelize_gives(spark):
    def task(items):
        for item in items:
            yield {"item": item, "square": item * item}

    slices = cut(list(range(11)), 4)
    assert [len(s) for s in slices] == [2, 3, 3, 3] and [i for s in slices for i in s] == list(range(11))
    assert (
        _on_connect(spark, slices, task)
        == run_tasks(spark, slices, task)
        == [{"item": i, "square": i * i} for i in range(11)]
    )
    assert _on_connect(spark, [], task) == run_tasks(spark, [], task) == []


@pytest.mark.parametrize(
    "url, writer, said",
    [
        ("localhost:15002", "auto", "--remote takes a Spark Connect URL"),
        ("sc://", "auto", "--remote takes a Spark Connect URL"),
        ("sc://host:15002", "delta-rs", "--writer delta-rs writes the tables from this process"),
    ],
)
def test_a_remote_run_is_checked_before_anything_starts(url, writer, said):
    with pytest.raises(UserError, match=said):
        check_remote({"spark.remote": url}, writer)
    check_remote({}, writer)  # no server: nothing to check


def test_a_missing_connect_client_is_one_sentence(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "grpc", None)  # import grpc raises ImportError
    with pytest.raises(UserError, match=r"pip install 'kafka-offset-audit\[connect\]'"):
        check_remote({"spark.remote": "sc://127.0.0.1:15002"}, "auto")


def test_the_command_refuses_a_bad_remote_before_spark(no_spark, tmp_path, monkeypatch):
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    (tmp_path / "dump").mkdir()
    result = CliRunner().invoke(
        main, ["audit", "--input", str(tmp_path / "dump"), "--output", str(tmp_path / "out"), "--remote", "host:1"]
    )
    assert result.exit_code == 2
    assert "--remote takes a Spark Connect URL, sc://HOST[:PORT][;NAME=VALUE...], not 'host:1'" in result.output
    monkeypatch.setenv("SPARK_REMOTE", "sc://127.0.0.1:1")
    result = CliRunner().invoke(
        main, ["audit", "--input", str(tmp_path / "dump"), "--output", str(tmp_path / "o"), "--writer", "delta-rs"]
    )
    assert result.exit_code == 2 and "leave --writer at auto or delta-spark" in result.output
    assert not (tmp_path / "out").exists() and not (tmp_path / "o").exists()


def test_a_connect_servers_progress_is_the_running_stages_tasks():
    class Stage:
        def __init__(self, tasks, completed, done=False):
            self.num_tasks, self.num_completed_tasks, self.done = tasks, completed, done

    progress = ServerProgress()
    progress([Stage(4, 1), Stage(2, 2, done=True)], 3, "op", False)
    assert progress.tasks == (1, 4)
    progress([Stage(4, 4)], 0, "op", True)
    assert progress.tasks is None


def test_a_server_that_does_not_answer_is_one_sentence_before_any_session():
    import socket

    from offset_audit.runtime.session import check_reachable_server

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # bound, never listening: the connection is refused
        with pytest.raises(UserError, match=rf"cannot reach the Spark Connect server at sc://127.0.0.1:{port}: "):
            check_reachable_server(f"sc://127.0.0.1:{port}")
        with pytest.raises(UserError, match="Connection refused"):
            check_reachable_server(f"sc://127.0.0.1:{port}/;use_ssl=false")


def test_a_dataframe_argument_names_its_session(spark):
    @connect_route(lambda frame: "connect")
    def release(frame):
        return "classic"

    assert release(spark.range(1)) == "classic"
