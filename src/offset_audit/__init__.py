"""kafka-offset-audit: dumps of Kafka's __consumer_offsets judged as the group coordinator would.

The package is laid out the way the data flows. Each subpackage's docstring says what it holds and what
it may import (tests/test_layout.py holds it to that):

    inputs/       where raw records come from: snapshots, log segments, text dumps, the live topic
    decoding/     raw records -> typed rows of every decode table, or quarantine rows
    coordinator/  the group coordinator's model, no I/O: replay, rules, verdicts, history, share groups
    share_coordinator/  the share coordinator's model, no I/O: each share-partition's state (KIP-932)
    outputs/      every table and file the job writes (Delta by delta-rs or delta-spark), and reading back
    views/        what people and programs read, no Spark: summaries, describe, JSON, metrics, HTML
    runtime/      what every run needs: the SparkSession, settings, progress, preflight checks
    runs/         each command end to end, one module each, and the helpers they share
    api/          the public Python API: the runs on a session the caller holds, results as DataFrames
    cli/          the click commands: flags -> settings -> a run (through api/) or a view
    warm/         a Spark session kept warm between runs, and the program's hand-over of a run to it
    generator/    deterministic dumps for the demo, the tests and the bench
    layouts/      the record layouts and output tables of schemas/ as data, and the wire format

The modules beside them are the vocabulary every stage shares, and import no subpackage: constants
(Kafka's numbers), errors (user errors), broker_versions (what each broker version's coordinators do
differently), settings (every setting, defined once with its default, range, flag and help, by the means
of setting_definitions), storage (paths and object stores), durations, timestamps (Kafka's
milliseconds), escaping (names from the dump made inert for each medium), snapshot_ids (the ids a run's
rows carry), table_names (the output folder's tables), snapshot_totals (what the snapshots table lists
of an audit snapshot), delta_files (a Delta table read through its live files, without Spark),
share_findings_rows (the share_findings row both coordinators' findings fill), jvm (what a session's JVM
holds), session_kind (classic and Spark Connect sessions told apart, and the mark of code that only a
classic one runs) and python_tasks (Python work on items the driver names, one Spark task per slice, on
either kind of session).
"""

# The one version: pyproject.toml reads it (setuptools' dynamic version), `offset-audit --version` prints it.
__version__ = "0.1.0"
