"""One local SparkSession for the whole test run: few shuffle partitions, no UI."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
# Spark hands timestamps to Python as naive local times; make local time UTC so tests read the same anywhere.
os.environ["TZ"] = "UTC"
time.tzset()


@pytest.fixture(scope="session")
def spark():
    from offset_audit.session import get_spark

    session = get_spark(
        {
            "spark.master": "local[2]",
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.driver.memory": "2g",
            "spark.sql.execution.arrow.maxRecordsPerBatch": "1000",
        }
    )
    yield session
    session.stop()
