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
	$(BIN)/python -m pip install --quiet -e '.[dev,embedded]'
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

## Timing scripts (not tests); figures are printed, not asserted.
bench: $(STAMP)
	$(BIN)/python -m benchmarks.bench_core
	$(BIN)/python -m benchmarks.bench_versions
	$(BIN)/python -m benchmarks.bench_legacy
	$(BIN)/python -m benchmarks.bench_context

clean:
	rm -rf $(VENV) .ctxstore .pytest_cache .mypy_cache .ruff_cache .hypothesis
