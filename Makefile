# kafka-offset-audit: `make demo` and `make test` work from a fresh clone (Python 3.11+, Java 17+).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
SIZES ?= 1000000,5000000
CODECS ?= none,zstd
# make bench's dump with many live offsets (generate --topic-scale 30): about 3M of them at 20M records
WIDE_SIZES ?= 20000000
# The whole-process audits bench/fixed_cost.py runs beside Spark's start.
FIXED_COST_SIZES ?= 1000,300000,5000000,20000000
# bench/connect.py: the audit on a Spark Connect server beside classic sessions.
CONNECT_RECORDS ?= 300000
# bench/floors.py: the least an audit must do, in the engines themselves, against the raw scan.
FLOOR_RECORDS ?= 20000000
# bench/incremental.py: scheduled `audit --incremental` runs over 0.1%, 1% and 10% new records of this log.
INCREMENTAL_RECORDS ?= 20000000
DEMO_RECORDS ?= 300000
# Kafka versions whose broker and tools the live tests start (jars from Maven Central, in .kafka/V/libs).
KAFKA_VERSIONS ?= 4.1.2 4.4.0 3.9.2
KAFKA_DIR := .kafka
# The JVM parts the Spark-native routes need (delta-spark, Spark's Kafka source, hadoop-aws), in .jars/spark.
SPARK_JARS := .jars/spark
YARN_JARS := .jars/yarn
# Prometheus, promtool, node_exporter and the Pushgateway for the metrics tests: Debian's packages,
# unpacked (not installed) into .prometheus/root.
PROMETHEUS_DIR := .prometheus
PROMETHEUS_DEBS := prometheus prometheus-node-exporter prometheus-pushgateway

.PHONY: setup check-java jvm-archive kafka spark-jars browser prometheus demo test check lint bench package package-driver clean

setup: $(STAMP) kafka spark-jars jvm-archive

# The classes a small audit's JVM loads, archived once (in ~/.cache/kafka-offset-audit) so that later
# runs over small dumps map them instead of loading them from the jars: offset_audit.runtime.local_jvm.py.
# Quick when the archive is there; where it cannot be built, runs start without it.
jvm-archive: $(STAMP)
	@$(BIN)/python -m offset_audit.runtime.local_jvm

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; v = sys.version_info; sys.exit(0 if v >= (3, 11) else "Python 3.11+ is needed, found %d.%d: install python3.11 or run make PYTHON=/path/to/python3.11" % v[:2])'
	@$(MAKE) --no-print-directory check-java
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

check-java:
	@command -v java >/dev/null 2>&1 || [ -n "$$JAVA_HOME" ] || { echo "Java 17+ is needed by Spark and was not found: install it (e.g. apt-get install openjdk-17-jre-headless) or set JAVA_HOME." >&2; exit 2; }
	@v=$$( { "$${JAVA_HOME:+$$JAVA_HOME/bin/}java" -version 2>&1 || true; } | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1); \
	  if [ -z "$$v" ] || [ "$$v" -lt 17 ]; then echo "Java 17+ is needed by Spark, found '$$v': install openjdk-17-jre-headless or point JAVA_HOME at a newer JDK." >&2; exit 2; fi

demo: setup
	$(BIN)/offset-audit generate --output demo-input --records $(DEMO_RECORDS) --seed 7 --corrupt 12 --end-offsets demo-end-offsets.txt
	$(BIN)/offset-audit audit --input demo-input --output demo-output --end-offsets demo-end-offsets.txt
	$(BIN)/offset-audit whatif --input demo-input --output demo-output --retention-minutes 1d,3d,7d,14d,30d --quiet
	$(BIN)/offset-audit delete-plan --audit demo-output --script demo-output/delete-offsets.sh
	$(BIN)/offset-audit report --audit demo-output --output demo-output/report.html

# Apache Kafka's broker and tools for the live tests, each version fetched once by the machine's mvn from
# jars/kafka/pom.xml. Never fails: where Maven or mvn cannot be had, .kafka/V/unavailable says why and the
# live tests of that version skip with that reason (in CI such a skip fails the run: tests/ci_gate.py).
kafka: $(foreach v,$(KAFKA_VERSIONS),$(KAFKA_DIR)/$(v)/.fetched)

$(KAFKA_DIR)/%/.fetched: jars/kafka/pom.xml
	@mkdir -p $(KAFKA_DIR)/$*
	@rm -rf $(KAFKA_DIR)/$*/unavailable $(KAFKA_DIR)/$*/libs $(KAFKA_DIR)/$*/classes $(KAFKA_DIR)/$*/cds
	@if ! command -v mvn >/dev/null 2>&1; then \
	  echo "mvn is not installed (apt-get install maven), so make kafka could not fetch Kafka $*" > $(KAFKA_DIR)/$*/unavailable; \
	  echo "mvn not found: the live Kafka $* tests will skip" >&2; \
	elif echo "fetching Kafka $* (broker and tools) from Maven Central into $(KAFKA_DIR)/$*" >&2 && \
	  mvn -q -B -f jars/kafka/pom.xml dependency:copy-dependencies -Dkafka.version=$* -DincludeScope=runtime \
	    -DoutputDirectory="$(CURDIR)/$(KAFKA_DIR)/$*/libs" > $(KAFKA_DIR)/$*/mvn.log 2>&1; then \
	  touch $@; \
	else \
	  { printf 'Maven could not fetch Kafka $*: '; grep -m1 'ERROR' $(KAFKA_DIR)/$*/mvn.log | cut -c1-400; } > $(KAFKA_DIR)/$*/unavailable; \
	  cat $(KAFKA_DIR)/$*/unavailable >&2; \
	fi

# delta-spark, Spark's Kafka source and hadoop-aws for the pinned pyspark, fetched once by the machine's mvn
# from jars/spark/pom.xml; the jars pyspark already ships are dropped (jars/only_missing.py). Sessions get
# them through spark.jars (docs/cluster.md), nothing is resolved at run time. Never fails: where they cannot
# be had, .jars/spark/unavailable says why and the tests that need them skip with that reason (CI: fail).
spark-jars: $(SPARK_JARS)/.fetched $(YARN_JARS)/.fetched

# Hadoop's MiniYARNCluster for the YARN test (tests/yarn/MiniYarn.java); like the Spark jars, a folder that
# says why when Maven cannot serve them, and the test skips with that reason.
$(YARN_JARS)/.fetched: jars/yarn/pom.xml
	@rm -rf $(YARN_JARS) && mkdir -p $(YARN_JARS)
	@if ! command -v mvn >/dev/null 2>&1; then \
	  echo "mvn is not installed (apt-get install maven), so make spark-jars could not fetch hadoop-client-minicluster" > $(YARN_JARS)/unavailable; \
	elif mvn -q -B -f jars/yarn/pom.xml dependency:copy-dependencies -DincludeScope=runtime \
	    -DoutputDirectory="$(CURDIR)/$(YARN_JARS)" > $(YARN_JARS).mvn.log 2>&1; then touch $@; \
	else \
	  { printf 'Maven could not fetch the YARN test jars: '; grep -m1 'ERROR' $(YARN_JARS).mvn.log | cut -c1-400; } > $(YARN_JARS)/unavailable; \
	  cat $(YARN_JARS)/unavailable >&2; \
	fi

$(SPARK_JARS)/.fetched: jars/spark/pom.xml jars/only_missing.py $(STAMP)
	@rm -rf $(SPARK_JARS) && mkdir -p $(SPARK_JARS)
	@if ! command -v mvn >/dev/null 2>&1; then \
	  echo "mvn is not installed (apt-get install maven), so make spark-jars could not fetch delta-spark, Spark's Kafka source and hadoop-aws" > $(SPARK_JARS)/unavailable; \
	  cat $(SPARK_JARS)/unavailable >&2; \
	elif echo "fetching delta-spark, Spark's Kafka source and hadoop-aws from Maven Central into $(SPARK_JARS)" >&2 && \
	  mvn -q -B -f jars/spark/pom.xml dependency:copy-dependencies -DincludeScope=runtime \
	    -DoutputDirectory="$(CURDIR)/$(SPARK_JARS)" > $(SPARK_JARS).mvn.log 2>&1; then \
	  $(BIN)/python jars/only_missing.py $(SPARK_JARS) "$$($(BIN)/python -c 'import pyspark, os; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')" && touch $@; \
	else \
	  { printf 'Maven could not fetch the Spark jars: '; grep -m1 'ERROR' $(SPARK_JARS).mvn.log | cut -c1-400; } > $(SPARK_JARS)/unavailable; \
	  cat $(SPARK_JARS)/unavailable >&2; \
	fi

# Chromium for the report's browser test (tests/views/test_html_report.py), from Debian packages. Never fails:
# without it (not root, no apt-get) that one test skips and says why.
browser:
	@if command -v chromium >/dev/null || command -v chromium-browser >/dev/null || command -v google-chrome >/dev/null; then :; \
	elif [ "$$(id -u)" != 0 ]; then echo "chromium not installed and not root: the report's browser test will skip (as root, make browser installs it)" >&2; \
	elif ! command -v apt-get >/dev/null; then echo "chromium not installed and no apt-get here: the report's browser test will skip" >&2; \
	else echo "installing chromium (Debian package) for the report's browser test" >&2; \
	  { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }; } >/dev/null \
	  || echo "apt-get could not install chromium: the report's browser test will skip" >&2; fi

# Prometheus' own binaries for the alert-rule and real-stack tests (tests/prometheus_stack.py), from Debian's
# packages: apt-get download and dpkg -x, so no root is needed where the package lists are there. Never
# fails: where they cannot be had, .prometheus/unavailable says why and those tests skip (CI: fail).
prometheus: $(PROMETHEUS_DIR)/.fetched

$(PROMETHEUS_DIR)/.fetched:
	@rm -rf $(PROMETHEUS_DIR) && mkdir -p $(PROMETHEUS_DIR)/debs
	@if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg >/dev/null 2>&1; then \
	  echo "apt-get and dpkg are not here, so make prometheus could not fetch Debian's $(PROMETHEUS_DEBS)" > $(PROMETHEUS_DIR)/unavailable; \
	  cat $(PROMETHEUS_DIR)/unavailable >&2; \
	elif echo "fetching Debian's $(PROMETHEUS_DEBS) into $(PROMETHEUS_DIR)" >&2 && \
	  { (cd $(PROMETHEUS_DIR)/debs && apt-get download -qq $(PROMETHEUS_DEBS)) > $(PROMETHEUS_DIR)/apt.log 2>&1 || \
	    { [ "$$(id -u)" = 0 ] && apt-get update -qq >> $(PROMETHEUS_DIR)/apt.log 2>&1 && \
	      (cd $(PROMETHEUS_DIR)/debs && apt-get download -qq $(PROMETHEUS_DEBS)) >> $(PROMETHEUS_DIR)/apt.log 2>&1; }; } && \
	  for deb in $(PROMETHEUS_DIR)/debs/*.deb; do dpkg -x "$$deb" $(PROMETHEUS_DIR)/root || exit 1; done; then \
	  touch $@; \
	else \
	  { printf 'apt-get could not fetch Debian'"'"'s $(PROMETHEUS_DEBS): '; grep -m1 -E '^(E|W):' $(PROMETHEUS_DIR)/apt.log | cut -c1-400; } > $(PROMETHEUS_DIR)/unavailable; \
	  cat $(PROMETHEUS_DIR)/unavailable >&2; \
	fi

# pytest-xdist's workers: the live tests mostly wait (on retention, sweeps, joins), and their waiting runs
# beside the CPU-bound tests; tests/xdist_units.py says which tests share a worker and which start first.
TEST_WORKERS ?= 4

test: setup browser prometheus
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder

lint: $(STAMP)
	$(BIN)/ruff check src tests jobs bench
	$(BIN)/ruff format --check src tests jobs bench

# The inner loop, in a few minutes: lint, the type check of src/ (mypy, pyproject.toml), and the tests that
# need no JVM, service or browser (tests/quick_run.py); make kafka first, as the layouts are compared with
# the message JSON in Kafka's jars (read as files). make test runs every test.
check: lint kafka
	$(BIN)/mypy
	$(BIN)/pytest -n 2 --quick

bench: setup
	$(BIN)/python bench/run_bench.py --sizes $(SIZES) --codecs $(CODECS) --wide-sizes $(WIDE_SIZES)
	$(BIN)/python bench/fixed_cost.py --sizes $(FIXED_COST_SIZES)
	$(BIN)/python bench/floors.py --records $(FLOOR_RECORDS)
	$(BIN)/python bench/incremental.py --records $(INCREMENTAL_RECORDS) --warm
	$(BIN)/python bench/snapshots.py --snapshots 1000 --keep 48
	$(BIN)/python bench/connect.py --records $(CONNECT_RECORDS)

# For spark-submit: the package (--py-files) and the executors' Python environment (--archives ...#env).
# PYTHON_PREFIX=/usr when the workers' python3.11 is not at this machine's path.
package: setup
	$(BIN)/python jobs/package_py_files.py dist/offset_audit.zip
	$(BIN)/python jobs/package_env.py executors dist/offset_audit_env.tar.gz $(if $(PYTHON_PREFIX),--python-prefix $(PYTHON_PREFIX))

# Cluster deploy mode (YARN, Kubernetes): the driver runs in the cluster and needs delta-rs and click too.
package-driver: package
	$(BIN)/python jobs/package_env.py driver dist/offset_audit_driver_env.tar.gz $(if $(PYTHON_PREFIX),--python-prefix $(PYTHON_PREFIX))

clean:
	rm -rf demo-input demo-end-offsets.txt demo-output bench-data dist spark-warehouse .pytest_cache
