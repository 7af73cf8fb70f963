# kafka-offset-audit: `make demo` and `make test` work from a fresh clone (Python 3.11+, Java 17+).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
RECORDS ?= 5000000
DEMO_RECORDS ?= 300000

.PHONY: setup check-java demo test lint bench package package-driver clean

setup: $(STAMP)

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
	$(BIN)/offset-audit generate --output demo-input --records $(DEMO_RECORDS) --seed 7 --corrupt 12
	$(BIN)/offset-audit audit --input demo-input --output demo-output
	$(BIN)/offset-audit delete-plan --audit demo-output --script demo-output/delete-offsets.sh

test: setup
	$(BIN)/pytest

lint: setup
	$(BIN)/ruff check src tests jobs bench
	$(BIN)/ruff format --check src tests jobs bench

bench: setup
	$(BIN)/python bench/run_bench.py --records $(RECORDS)

# For spark-submit: the package (--py-files) and the executors' Python environment (--archives ...#env).
# PYTHON_PREFIX=/usr when the workers' python3.11 is not at this machine's path.
package: setup
	$(BIN)/python jobs/package_py_files.py dist/offset_audit.zip
	$(BIN)/python jobs/package_env.py executors dist/offset_audit_env.tar.gz $(if $(PYTHON_PREFIX),--python-prefix $(PYTHON_PREFIX))

# Cluster deploy mode (YARN, Kubernetes): the driver runs in the cluster and needs delta-rs and click too.
package-driver: package
	$(BIN)/python jobs/package_env.py driver dist/offset_audit_driver_env.tar.gz $(if $(PYTHON_PREFIX),--python-prefix $(PYTHON_PREFIX))

clean:
	rm -rf demo-input demo-output bench-data dist spark-warehouse .pytest_cache
