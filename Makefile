# ctxstore — the two commands a newcomer needs: `make demo` and `make test`.
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PYTHON_FOR_VENV := $(shell scripts/pick-python)

.PHONY: demo test lint format check bench clean

$(STAMP): pyproject.toml
	@test -n "$(PYTHON_FOR_VENV)" || (echo "no Python >= 3.11 found" && exit 1)
	$(PYTHON_FOR_VENV) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,embedded,redis]'
	@touch $(STAMP)

## Start the embedded PostgreSQL, migrate, save and reload a short consultation.
demo: $(STAMP)
	$(BIN)/ctxstore demo

## The whole test suite on a real PostgreSQL (see README: which server is used).
test: $(STAMP)
	$(BIN)/pytest

## ruff and mypy --strict.
lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks alembic
	$(BIN)/ruff format --check src tests benchmarks alembic
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff format src tests benchmarks alembic
	$(BIN)/ruff check --fix src tests benchmarks alembic

check: lint test

BENCH_STAMP := $(VENV)/.bench-stamp

$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,embedded,redis,bench]'
	@touch $(BENCH_STAMP)

## Timing scripts (not tests): one comparison table, JSON and a PNG chart in
## benchmarks/results/, then the per-issue scripts and the soak.
bench: $(BENCH_STAMP)
	$(BIN)/python -m benchmarks.bench_compare
	$(BIN)/python -m benchmarks.bench_core
	$(BIN)/python -m benchmarks.bench_versions
	$(BIN)/python -m benchmarks.bench_legacy
	$(BIN)/python -m benchmarks.bench_context
	$(BIN)/python -m benchmarks.soak

clean:
	rm -rf $(VENV) .ctxstore .pytest_cache .mypy_cache .ruff_cache .hypothesis
