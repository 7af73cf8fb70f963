"""The API's runs on a Spark Connect session, for tests/test_connect.py: run in a process of its own, since
a Python process that opens a Connect session turns pyspark's functions to their Connect forms for any
session it holds (pyspark.sql.utils.is_remote). Each run writes its folder under OUT:

    python tests/connect_api_runs.py sc://127.0.0.1:PORT DUMP END_OFFSETS SHARE_DUMP OUT [OTHER_DUMP...]

and what the runs found that the folders do not show is printed as one JSON line, with the raw records
`read_dump` reads from each OTHER_DUMP (log segments, text dumps) as a digest."""

from __future__ import annotations

import hashlib
import json
import sys

from pyspark.sql import SparkSession

from offset_audit import api
from offset_audit.session_kind import is_remote


def raw_digest(frame) -> list:
    """The rows' count and a digest of them in order: what any two reads of a dump must agree on."""
    rows = sorted(map(repr, frame.toArrow().to_pylist()))
    return [len(rows), hashlib.sha256("\n".join(rows).encode()).hexdigest()]


def main() -> None:
    url, dump, ends, share_dump, out, *others = sys.argv[1:]
    spark = SparkSession.builder.remote(url).getOrCreate()
    assert is_remote(spark)
    found = {"raw_records": api.read_dump(spark, dump).count()}
    with api.audit(spark, dump, end_offsets=ends, output=f"{out}/audit") as audit:
        found["audit_reconciles"] = audit.report.reconciles
        found["partition_verdicts"] = audit.partition_verdicts.count()
        api.write(audit, f"{out}/written")  # an audit folder elsewhere, written through the server too
    whatif = api.whatif(spark, dump, retention=["1d", "7d"], per_group=True, output=f"{out}/whatif")
    found["scenarios"] = len(whatif.scenarios)
    api.history(spark, dump, output=f"{out}/history")
    with api.share(spark, share_dump, output=f"{out}/share") as shared:
        found["share_quarantined"] = shared.report.quarantined
    api.decode(spark, dump, output=f"{out}/decode")
    found["read"] = {other: raw_digest(api.read_dump(spark, other)) for other in others}
    print(json.dumps(found))


if __name__ == "__main__":
    main()
