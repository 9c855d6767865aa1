# persona-drift: `make demo` runs the main job on the embedded stack; `make test` runs the whole suite.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: demo test lint typecheck unit bench schemas reference parity-agentv clean chaos sandbox-tools

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

# User code (Plexus code nodes, AgentV code judges) runs only in the sandbox of docs/formats/sandbox.md: Debian's
# bubblewrap and libseccomp's Python binding. Installed here when missing, as root with apt-get; otherwise one line
# says what is missing and the run goes on (drift then refuses such code, and the sandbox tests fail saying why).
SANDBOX_PACKAGES := bubblewrap python3-seccomp
sandbox-tools:
	@if command -v bwrap >/dev/null 2>&1 && /usr/bin/python3 -c 'import seccomp' >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "make: installing the user-code sandbox ($(SANDBOX_PACKAGES)) with apt-get"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	    $(SANDBOX_PACKAGES) >/dev/null) || echo "make: apt-get could not install $(SANDBOX_PACKAGES)" >&2; \
	else \
	  echo "make: the user-code sandbox is missing (install $(SANDBOX_PACKAGES) as root): code nodes and code judges will be refused, their sandbox tests fail" >&2; \
	fi

# -n auto: one pytest worker per core plus one, each with its own embedded broker and database (tests/conftest.py);
# --dist loadfile keeps a file's tests (and its module-scoped workers) on one of them; --no-loadscope-reorder hands
# the files out longest first (tests/conftest.py orders them), not by their number of tests. Bytecode is written
# even where the environment says not to: each xdist worker otherwise re-does pytest's assertion rewriting of every
# test module (about 15 s of CPU per worker at the start of a run in a checkout that has run the suite before).
test: $(VENV)/.dev sandbox-tools lint typecheck
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/pytest -q -n auto --dist loadfile --no-loadscope-reorder --durations=15

lint: $(VENV)/.dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(VENV)/.dev
	$(BIN)/mypy

unit: $(VENV)/.dev sandbox-tools
	$(BIN)/pytest -q -m "not e2e"

bench: $(VENV)/.dev sandbox-tools
	$(BIN)/python -m ops.bench

schemas: $(VENV)/.dev
	$(BIN)/python -m ops.schemas

# docs/reference.md's settings table, from engine/settings.py (tests/test_reference_docs.py fails when it is stale)
reference: $(VENV)/.dev
	$(BIN)/python -m ops.reference

# Not part of `make test`: installs agentv@4.42.4 from the npm registry into ~/.cache/persona-drift/agentv and
# compares its scores with drift's on ops/parity/agentv/ (docs/formats/agentv.md).
parity-agentv: $(VENV)/.dev sandbox-tools
	$(BIN)/python -m ops.parity.agentv

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis

# The reliability suite (not part of `make test`): worker kills, judge faults, a database outage; see RELIABILITY.md.
chaos: $(VENV)/.dev
	$(BIN)/python -m ops.chaos
