"""spark-submit entry for `whatif`: the same code as the CLI, on the cluster's session.

    spark-submit --py-files dist/offset_audit.zip jobs/whatif_retention.py --input ... --output ... \
        --retention-minutes 1440,10080,43200
"""

from __future__ import annotations

import sys

from pyspark.sql import SparkSession

from offset_audit.cli import main

if __name__ == "__main__":
    SparkSession.builder.getOrCreate()  # the cluster's session; get_spark() then reuses it
    sys.exit(main(["whatif", *sys.argv[1:]]))
