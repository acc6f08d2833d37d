# Every target sets up .venv first, so `make run` and `make test` work on a fresh clone.
# `make run` installs the broker's runtime dependencies only (pyproject.toml [project]
# dependencies); `make install` and `make test` add the test tools, clients and Spark (the
# [test] and [spark] extras: pyspark, playwright, a 92 MB jar wheel).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
RUN_STAMP := $(VENV)/.installed-run-stamp
DIST   := dist

.PHONY: install run test test-pure compiled lint bench clean reference wheel

install: $(STAMP) compiled

# The hot modules compiled by mypyc into $(VENV)/minibroker-compiled (issue 33,
# minibroker_protocol/compiled.py); rebuilt only when one of their sources changed. Without a C
# compiler or mypyc it says so and the pure-Python modules run.
compiled:
	$(PY) tools/compile_hot_modules.py --if-stale

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,spark,registry]'
	touch $(STAMP) $(RUN_STAMP)

# the runtime only: what `python -m minibroker` imports
$(RUN_STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[registry]'
	touch $(RUN_STAMP)

# The console (and /metrics) on 127.0.0.1:8080 and the schema registry (Confluent's REST API) on
# 127.0.0.1:8081; the broker prints both URLs at start.
run: $(RUN_STAMP)
	$(PY) tools/compile_hot_modules.py --if-stale
	$(PY) -m minibroker --host 127.0.0.1 --port 9092 --data-dir data --config config.yaml --console-port 8080 \
		--schema-registry-port 8081

# A wheel to install into another project's environment (docs/testing.md):
# dist/minibroker-<version>-py3-none-any.whl. Needs only pip (setuptools comes in pip's build env).
wheel:
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	rm -rf build  # setuptools reuses build/lib: a module removed since would come back
	$(PY) -m pip wheel -q --no-deps -w $(DIST) .

JS_STAMP := tests/js/node_modules/.installed-stamp

# kafkajs for the idempotent-producer test (from the npm registry, pinned by package-lock.json)
$(JS_STAMP): tests/js/package-lock.json
	cd tests/js && npm ci --silent --no-audit --no-fund
	touch $(JS_STAMP)

# Apache Kafka's jars (version pinned in reference/pom.xml) for the reference broker and Kafka's own
# tools (tests/reference, reference/kafka-tool), copied by Maven into ~/.cache/minibroker/kafka-<version>/libs.
# Also kafka-metadata-shell 4.3.1 apart (reference/shell/pom.xml: 4.4's is not on Maven Central).
# Quick when cached (a stamp file); without mvn it says so and tests/reference skip.
reference:
	$(PYTHON) reference/kafka_reference.py fetch

PYTEST_ARGS := -q --durations=25 -n 2 --dist loadfile --no-loadscope-reorder

test: install $(JS_STAMP) reference
	$(PY) -m pytest $(PYTEST_ARGS)

# the same tests on the pure-Python modules only (the reference the compiled ones are checked against)
test-pure: install $(JS_STAMP) reference
	MINIBROKER_PURE_PYTHON=1 $(PY) -m pytest $(PYTEST_ARGS)

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

bench: install
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) data $(DIST) build .pytest_cache tests/js/node_modules
