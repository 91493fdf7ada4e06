# releval: `make run` and `make test` do all the set-up on a fresh machine
# (Python 3.11 and Java 17 are the only prerequisites; Maven is used if present).

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
DELTA_VERSION := 4.0.1
JARS_DIR := .jars
JARS := $(JARS_DIR)/delta-spark_2.13-$(DELTA_VERSION).jar $(JARS_DIR)/delta-storage-$(DELTA_VERSION).jar
comma := ,
empty :=
space := $(empty) $(empty)
CONFIG ?= conf/local.toml
BENCH_SIZE ?= quick
# the driver JVM's class-data-sharing archive (releval.runtime.session.CLASS_ARCHIVE): written once
# by `make install`, mapped by every local driver JVM (a small job starts faster)
CLASS_ARCHIVE := $(JARS_DIR)/releval-classes.jsa
# the options releval gives a driver JVM it starts itself, for CONFIG: the class archive's
# (when written) and, for a short job (small local inputs), C1 only; spark-submit starts
# the JVM before any releval code runs, so releval.runtime.session prints them here
DRIVER_OPTIONS = $(shell $(PY) -m releval.runtime.session --driver-options $(CONFIG) 2>/dev/null)
SPARK_SUBMIT = PYSPARK_PYTHON=$(abspath $(PY)) PYSPARK_DRIVER_PYTHON=$(abspath $(PY)) \
	$(VENV)/bin/spark-submit --jars $(subst $(space),$(comma),$(abspath $(JARS))) \
	--driver-java-options '-Dlog4j2.configurationFile=$(abspath conf/log4j2.properties) $(DRIVER_OPTIONS)'

DIST_DIR := dist

# pytest under the suite's limit: prints the wall time and the 15 slowest tests; past the
# limit it stops with a message that names the limit (exit code 124)
define timed_pytest
start=$$(date +%s); \
timeout --kill-after=60 $$(( $(SUITE_LIMIT_MINUTES) * 60 )) $(PY) -m pytest $(1) --durations=15; \
code=$$?; elapsed=$$(( $$(date +%s) - start )); \
echo "$(2): pytest wall time $$(( elapsed / 60 )) min $$(( elapsed % 60 )) s (limit $(SUITE_LIMIT_MINUTES) min)"; \
if [ $$code -eq 124 ] || [ $$code -eq 137 ]; then \
  echo "$(2): FAILED: the tests passed their $(SUITE_LIMIT_MINUTES)-minute limit and were stopped; docs/development.md has the budgets and how to find the slow tests"; fi; \
exit $$code
endef

.PHONY: help install jars classes browser run sample compare gate agree clicks report test test-fast coverage cluster-test dist bench bench-compare bench-slices clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | expand -t 12

install: $(VENV)/.installed jars classes ## virtualenv with releval and its test tools; Delta's jars; the JVM's class archive

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

jars: $(JARS) ## fetch Delta's jars from Maven Central once, into .jars/

$(JARS_DIR)/%-$(DELTA_VERSION).jar: | $(VENV)/.installed
	mkdir -p $(JARS_DIR)
	@if command -v mvn >/dev/null 2>&1; then \
	  mvn -q -B dependency:copy -Dartifact=io.delta:$*:$(DELTA_VERSION) -DoutputDirectory=$(JARS_DIR); \
	else \
	  $(PY) -m releval.runtime.session --fetch-jars $(JARS_DIR); \
	fi

classes: $(CLASS_ARCHIVE) ## the driver JVM's class archive (a small evaluation, once: about a minute)

# an accelerator only: a JVM that cannot write the archive leaves the install as it was
# (tests/test_session.py, which `make test` runs, says when it is missing)
$(CLASS_ARCHIVE): $(JARS) $(VENV)/.installed
	$(PY) -m releval.job.class_archive $(JARS_DIR) \
	  || echo "classes: no class archive written; jobs run without it (a slower start)"

SAMPLE_STAMP := warehouse/sample/.generated

run: install $(SAMPLE_STAMP) ## run the evaluation job on the sample, print the aggregate table
	$(SPARK_SUBMIT) jobs/evaluate.py --config $(CONFIG)

COMPARE_DATE ?= 2026-11-28

compare: install $(SAMPLE_STAMP) ## paired tests on the sample: hybrid and dense against bm25 on COMPARE_DATE
	$(SPARK_SUBMIT) jobs/evaluate.py --config $(CONFIG) --partition date=$(COMPARE_DATE) --pending --show 0
	$(SPARK_SUBMIT) jobs/compare.py --config $(CONFIG) --baseline system=bm25 \
	  --candidate system=hybrid --candidate system=dense --partition date=$(COMPARE_DATE)

GATE_CONFIG := warehouse/gate.toml

gate: install $(SAMPLE_STAMP) ## the sample's job with a release gate (conf/gate.toml): each date against the previous one; prints the exit code
	cat $(CONFIG) conf/gate.toml > $(GATE_CONFIG)
	$(SPARK_SUBMIT) jobs/evaluate.py --config $(GATE_CONFIG) --show 0; code=$$?; \
	  echo "gate exit code $$code (0 pass, 1 fail, 3 inconclusive)"; test $$code -ne 2

AGREE_DATE ?= 2026-11-28

agree: install $(SAMPLE_STAMP) ## the sample's two qrels versions: kappa, and the systems' orderings and decisions on AGREE_DATE
	$(SPARK_SUBMIT) jobs/agree.py --config $(CONFIG) --run --partition date=$(AGREE_DATE) \
	  --baseline system=bm25

clicks: install $(SAMPLE_STAMP) ## the sample's click labels and position bias ([clicks]); prints the recovered bias next to the true one
	$(SPARK_SUBMIT) jobs/clicks.py --config $(CONFIG) --sample

REPORT ?= warehouse/releval/report.html

report: install $(SAMPLE_STAMP) ## HTML report with figures over the sample's output tables (evaluates what is missing first)
	$(SPARK_SUBMIT) jobs/evaluate.py --config $(CONFIG) --pending --show 0
	$(VENV)/bin/releval report --config $(CONFIG) --output $(REPORT)

sample: $(SAMPLE_STAMP) ## generate the synthetic sample search log and qrels (once) under warehouse/sample

$(SAMPLE_STAMP): src/releval/job/sample.py src/releval/job/sample_clicks.py | $(VENV)/.installed $(JARS)
	$(SPARK_SUBMIT) jobs/generate_sample.py --config conf/local.toml
	touch $@

# Debian's chromium for the report's browser test (no browser download): installed once.
browser: ## headless Chromium for the report's browser test (apt-get, Debian's chromium package)
	@command -v chromium >/dev/null 2>&1 || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium)

# the whole suite's limit: past it, `make test` stops with a named failure, inside CI's 90
# minutes with the set-up (docs/development.md)
SUITE_LIMIT_MINUTES ?= 70
PYTEST_WORKERS ?= 2

test: install browser dist ## lint (ruff), then the whole test suite (conformance tests read ../shared/conformance)
	$(VENV)/bin/ruff check .
	@$(call timed_pytest,-n $(PYTEST_WORKERS) --dist loadgroup,whole suite)

test-fast: install ## lint, then the fast layer: every test not marked slow (a few minutes)
	$(VENV)/bin/ruff check .
	@$(call timed_pytest,-n $(PYTEST_WORKERS) --dist loadgroup -m 'not slow',fast layer)

dist: $(JARS) | $(VENV)/.installed ## package the job for a cluster: wheel, releval.zip (--py-files), evaluate.py, jars/
	rm -rf $(DIST_DIR) build
	mkdir -p $(DIST_DIR)/jars
	$(PY) -m pip wheel --quiet --no-deps --wheel-dir $(DIST_DIR) .
	cp $(DIST_DIR)/releval-*-py3-none-any.whl $(DIST_DIR)/releval.zip
	cp jobs/evaluate.py $(DIST_DIR)/evaluate.py
	cp $(JARS) $(DIST_DIR)/jars/
	@ls -1 $(DIST_DIR) $(DIST_DIR)/jars

coverage: install browser dist ## the whole suite under coverage.py (pytest-cov): line coverage of src/releval in the tests' processes (docs/development.md)
	$(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadgroup -q --cov=src/releval --cov-report=term:skip-covered

cluster-test: install dist ## a standalone master and two workers on loopback; the packaged job on them (slow)
	$(PY) -m pytest tests/test_cluster.py


bench: install ## benchmark releval against its peers on synthetic data (BENCH_SIZE=quick|full|30m|100m)
	$(PY) -m pip install --quiet -e '.[bench]' || echo "bench: some peers did not install (recorded in the report)"
	$(PY) -m bench.harness --size $(BENCH_SIZE) --install
	$(PY) -m bench.compare notebook
	$(PY) -m bench.slices --size $(SLICES_SIZE)
	$(PY) -m bench.gate notebook
	$(PY) -m bench.gate job
	$(PY) -m bench.calibration
	$(PY) -m bench.click_labels --size $(CLICKS_SIZE)
	$(PY) -m bench.click_labels --size $(CLICKS_SIZE) --shape head
	$(PY) -m bench.clicks_online --searches $(CLICKS_SEARCHES)
	$(PY) -m bench.clicks_online --searches $(CLICKS_SEARCHES) --ids text

SLICES_SIZE ?= full
# the click benchmarks' sizes: impressions (tiny|quick|full|100m) and searches of 10 impressions
CLICKS_SIZE ?= quick
CLICKS_SEARCHES ?= 200000

bench-slices: install ## evaluate with 2 slice columns (3 and 40 values) and a weight against without, side by side (SLICES_SIZE=full: 10M run rows; quick: 1M)
	$(PY) -m bench.slices --size $(SLICES_SIZE)

bench-compare: install ## compare against what it compares: a default notebook session, and 1M queries against the Spark SQL floor
	$(PY) -m bench.compare notebook
	$(PY) -m bench.compare scale

clean: ## remove the sample warehouse, caches and dist/ (keeps .venv and .jars)
	rm -rf warehouse spark-warehouse metastore_db derby.log .pytest_cache $(DIST_DIR) build
