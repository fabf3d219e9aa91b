# ctxstore — the two commands a newcomer needs: `make demo` and `make test`.
# Another Python in its own virtualenv: make test PYTHON=python3.13 VENV=.venv313
# (PYTHON is a name on PATH or a path; without it, the first Python >= 3.11 on PATH).
VENV ?= .venv
PYTHON ?=
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PYTHON_FOR_VENV := $(shell PYTHON='$(PYTHON)' scripts/pick-python)

.PHONY: demo test test-slow test-all lint lint-migrations format check docs bench clean venv-check

# A venv built by another version than PYTHON names would quietly run that other version.
venv-check:
	@test -n "$(PYTHON_FOR_VENV)" || (echo "no usable Python >= 3.11 (see above)" && exit 1)
	@if [ -n "$(PYTHON)" ] && [ -x "$(BIN)/python" ]; then \
	    v='import sys; print("%d.%d" % sys.version_info[:2])'; \
	    want=$$("$(PYTHON_FOR_VENV)" -c "$$v"); have=$$("$(BIN)/python" -c "$$v"); \
	    if [ "$$want" != "$$have" ]; then \
	        echo "$(VENV) runs Python $$have, not $$want: pass VENV=.venv$$(echo $$want | tr -d .) or remove $(VENV)"; \
	        exit 1; \
	    fi; \
	fi

# pip stays quiet (its lines would bury the tests' output in CI logs): the lines around it
# say what it installs and how long it took, so the first minute or two is not silence.
$(STAMP): pyproject.toml | venv-check
	@echo "== installing ctxstore (editable) and its extras dev, embedded, redis and http into $(VENV):"
	@echo "   pytest, hypothesis, testcontainers, ruff, mypy, import-linter; LangChain, LangGraph and"
	@echo "   the OpenAI Agents SDK (the adapters' tests); the embedded PostgreSQL, redis, FastAPI, uvicorn."
	@echo "   pip runs quietly: a minute or two the first time, again only when pyproject.toml changes =="
	@start=$$(date +%s); \
	$(PYTHON_FOR_VENV) -m venv $(VENV) && \
	$(BIN)/python -m pip install --quiet --upgrade pip && \
	$(BIN)/python -m pip install --quiet -e '.[dev,embedded,redis,http]' && \
	echo "== installed into $(VENV) in $$(( $$(date +%s) - start )) s ==" && \
	touch $(STAMP)

# The demo needs ctxstore and the embedded PostgreSQL only: a first `make demo` installs
# just those (pip's own lines show the progress), not the test and lint toolchain.
DEMO_STAMP := $(VENV)/.demo-stamp

$(DEMO_STAMP): pyproject.toml | venv-check
	@if [ -f $(STAMP) ] && [ $(STAMP) -nt pyproject.toml ]; then touch $(DEMO_STAMP); else \
	    echo "== installing ctxstore and the embedded PostgreSQL into $(VENV) (the demo needs nothing else) =="; \
	    test -x $(BIN)/python || $(PYTHON_FOR_VENV) -m venv $(VENV); \
	    $(BIN)/python -m pip install --quiet --upgrade pip && \
	    $(BIN)/python -m pip install --progress-bar on -e '.[embedded]' && \
	    touch $(DEMO_STAMP); fi

## Start the embedded PostgreSQL, migrate, save and reload a short consultation.
demo: venv-check $(DEMO_STAMP)
	$(BIN)/ctxstore demo

# Test processes (pytest-xdist): more than the cores, because most of the suite waits on
# the servers, subprocesses and timers it starts (docs/testing.md has the figures).
TEST_WORKERS ?= 4

## The test suite on a real PostgreSQL (see README: which server is used), but for the
## tests marked slow (test-slow).
test: venv-check $(STAMP)
	@echo "== the test suite in $(TEST_WORKERS) processes, but for the tests marked slow: about 5 minutes on a"
	@echo "   quiet 2-core machine, up to 15 on a busy one; a dot per test passed, the percentage done at"
	@echo "   each line's end =="
	CTXSTORE_SLOW_TESTS=0 $(BIN)/pytest -n $(TEST_WORKERS)

## The tests marked slow: outage histories, the Go programs, the stateful models, the CLI
## end to end, schemathesis (.ci/run runs them after `make test`).
test-slow: venv-check $(STAMP)
	$(BIN)/pytest -n $(TEST_WORKERS) -m slow

## Everything `make test` and `make test-slow` run, in one run.
test-all: venv-check $(STAMP)
	$(BIN)/pytest -n $(TEST_WORKERS)

# Python files ruff checks and formats (scripts/lint-migrations has no .py to be found by).
RUFF_PATHS := src tests benchmarks alembic scripts/lint-migrations

## ruff, mypy --strict, the import contracts (lint-imports) and the migrations' SQL
## (lint-migrations).
lint: venv-check $(STAMP)
	$(BIN)/ruff check $(RUFF_PATHS)
	$(BIN)/ruff format --check $(RUFF_PATHS)
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(MAKE) --no-print-directory lint-migrations

## squawk on the SQL of every revision after the 1.0 baseline (.squawk.toml); squawk
## comes from scripts/install-squawk (.ci/run runs it), PostgreSQL as the tests find one.
lint-migrations: venv-check $(STAMP)
	$(BIN)/python scripts/lint-migrations

format: venv-check $(STAMP)
	$(BIN)/ruff format $(RUFF_PATHS)
	$(BIN)/ruff check --fix $(RUFF_PATHS)

check: lint test

DOCS_STAMP := $(VENV)/.docs-stamp

$(DOCS_STAMP): $(STAMP) | venv-check
	$(BIN)/python -m pip install --quiet -e '.[dev,embedded,redis,http,docs]'
	@touch $(DOCS_STAMP)

## The documentation site in site/, built strictly: a broken link or reference fails.
docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

BENCH_STAMP := $(VENV)/.bench-stamp

$(BENCH_STAMP): $(STAMP) | venv-check
	$(BIN)/python -m pip install --quiet -e '.[dev,embedded,redis,http,bench]'
	@touch $(BENCH_STAMP)

## Timing scripts (not tests): one comparison table, JSON and a PNG chart in
## benchmarks/results/, then the per-issue scripts and the soak.
bench: $(BENCH_STAMP)
	$(BIN)/python -m benchmarks.bench_compare
	$(BIN)/python -m benchmarks.bench_adapters
	$(BIN)/python -m benchmarks.bench_core
	$(BIN)/python -m benchmarks.bench_versions
	$(BIN)/python -m benchmarks.bench_legacy
	$(BIN)/python -m benchmarks.bench_go_interop
	$(BIN)/python -m benchmarks.bench_context
	$(BIN)/python -m benchmarks.bench_fairness
	$(BIN)/python -m benchmarks.bench_streaming
	$(BIN)/python -m benchmarks.bench_cost_curve
	$(BIN)/python -m benchmarks.bench_http
	$(BIN)/python -m benchmarks.bench_telemetry
	$(BIN)/python -m benchmarks.bench_citus
	$(BIN)/python -m benchmarks.bench_turn
	$(BIN)/python -m benchmarks.soak

clean:
	rm -rf $(VENV) .ctxstore .pytest_cache .mypy_cache .ruff_cache .hypothesis site
