"""The session helpers (offset_audit.runtime.session)."""

from __future__ import annotations

import pytest

from offset_audit.runtime.session import scoped_conf

KEY = "spark.sql.adaptive.enabled"


def test_scoped_settings_hold_inside_the_block_and_the_session_gets_its_own_back(spark):
    before = spark.conf.get(KEY)
    with scoped_conf(spark, {KEY: "false", "spark.offset_audit.test.unset": "x"}):
        assert spark.conf.get(KEY) == "false"
        assert spark.conf.get("spark.offset_audit.test.unset") == "x"
    assert spark.conf.get(KEY) == before
    assert spark.conf.get("spark.offset_audit.test.unset", None) is None


def test_settings_come_back_when_the_block_fails(spark):
    before = spark.conf.get(KEY)
    with pytest.raises(RuntimeError), scoped_conf(spark, {KEY: "false"}):
        raise RuntimeError("boom")
    assert spark.conf.get(KEY) == before
