# Every target sets up .venv first, so `make run` and `make test` work on a fresh clone.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

.PHONY: install run test lint bench clean reference

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,spark,registry]'
	touch $(STAMP)

# The console (and /metrics) on 127.0.0.1:8080 and the schema registry (Confluent's REST API) on
# 127.0.0.1:8081; the broker prints both URLs at start.
run: install
	$(PY) -m minibroker --host 127.0.0.1 --port 9092 --data-dir data --config config.yaml --console-port 8080 \
		--schema-registry-port 8081

JS_STAMP := tests/js/node_modules/.installed-stamp

# kafkajs for the idempotent-producer test (from the npm registry, pinned by package-lock.json)
$(JS_STAMP): tests/js/package-lock.json
	cd tests/js && npm ci --silent --no-audit --no-fund
	touch $(JS_STAMP)

# Apache Kafka's jars (version pinned in reference/pom.xml) for the reference broker and Kafka's own
# tools (tests/reference, reference/kafka-tool), copied by Maven into ~/.cache/minibroker/kafka-<version>/libs.
# Quick when cached (a stamp file); without mvn it says so and tests/reference skip.
reference:
	$(PYTHON) reference/kafka_reference.py fetch

test: install $(JS_STAMP) reference
	$(PY) -m pytest -q --durations=25

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

bench: install
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) data .pytest_cache tests/js/node_modules
