"""What a run must share with a warm session to use it, and where the session lives (offset_audit.warm.place)."""

from __future__ import annotations

from offset_audit.warm import place


def test_only_the_variables_a_jvm_reads_count_and_the_first_that_differs_is_named_not_its_value():
    session = {"AWS_SECRET_ACCESS_KEY": "old", "JAVA_HOME": "/jdk", "HOME": "/root", "PWD": "/a"}
    run = {"AWS_SECRET_ACCESS_KEY": "new", "JAVA_HOME": "/jdk", "HOME": "/home/x", "PWD": "/b"}
    assert place.environment_difference(session, run) == "AWS_SECRET_ACCESS_KEY"
    assert place.environment_difference(session, {**run, "AWS_SECRET_ACCESS_KEY": "old"}) is None


def test_a_variable_set_on_one_side_only_is_a_difference():
    assert place.environment_difference({}, {"SPARK_HOME": "/opt/spark"}) == "SPARK_HOME"
    assert place.environment_difference({"HADOOP_CONF_DIR": "/etc/hadoop"}, {}) == "HADOOP_CONF_DIR"
    assert place.environment_difference({"TZ": "UTC"}, {"TZ": "Europe/Paris"}) == "TZ"


def test_the_session_lives_in_the_cache_folder_under_a_name_of_this_python(monkeypatch, tmp_path_factory):
    cache = tmp_path_factory.mktemp("c")
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    assert place.socket_path().parent == cache / "kafka-offset-audit"
    assert place.socket_path().name == f"{place.session_name()}.sock"
    assert place.session_name() == place.session_name() and place.session_name().startswith("warm-")


def test_a_cache_folder_too_deep_for_a_socket_gives_a_private_folder_under_the_temporary_one(monkeypatch, tmp_path):
    deep = tmp_path / ("d" * 90)
    monkeypatch.setenv("XDG_CACHE_HOME", str(deep))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    path = place.socket_path()
    assert len(str(path)) <= place.MAX_SOCKET_PATH
    assert not str(path).startswith(str(deep))
    assert place.make_folder().stat().st_mode & 0o777 == 0o700


def test_the_fingerprint_follows_the_package_files(monkeypatch):
    first = place.code_fingerprint()
    assert place.code_fingerprint() == first
    real_stat = place.os.stat

    def touched(path, *args, **kwargs):
        found = real_stat(path, *args, **kwargs)
        if str(path).endswith("rules.py"):
            return type("Stat", (), {"st_size": found.st_size, "st_mtime_ns": found.st_mtime_ns + 1})()
        return found

    monkeypatch.setattr(place.os, "stat", touched)
    assert place.code_fingerprint() != first
