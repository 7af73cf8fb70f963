"""spark-submit entry for `decode`: the same code as the CLI, on the cluster's session.

    spark-submit --py-files kafka_offset_audit.zip jobs/decode_offsets.py --input s3://... --output ...

Under spark-submit the active session (and its master) is used; nothing here builds a local one.
"""

from __future__ import annotations

import sys

from pyspark.sql import SparkSession

from offset_audit.cli import main

if __name__ == "__main__":
    SparkSession.builder.getOrCreate()  # the cluster's session; get_spark() then reuses it
    sys.exit(main(["decode", *sys.argv[1:]]))
