"""spark-submit entry for `whatif`: the same code and flags as `offset-audit whatif`, on the submitted cluster.

See the README's "Run it on a cluster" for the whole spark-submit line (the executors' Python
environment, the package zip). Nothing is started here: the arguments and inputs are checked first,
so a mistake is one sentence (exit 2) before Spark asks the cluster for executors; the session is then
built from what was submitted (master, --conf), see offset_audit.runtime.session.
"""

from __future__ import annotations

import sys

from offset_audit.cli.main import main

if __name__ == "__main__":
    main(["whatif", *sys.argv[1:]], prog_name="offset-audit")
