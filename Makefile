# The two commands of the README: `make demo` and `make test`. Both set up .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test e2e-tools e2e bench clean

setup: $(STAMP)

$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

demo: setup
	$(BIN)/modelplane plan examples/multi-cloud

test: setup
	$(BIN)/python -m pytest

# The end-to-end suite: builds the toolchain from the Go module proxy on first use (about 15 minutes
# cold on 2 cores, cached per user under ~/.cache/modelplane-e2e), then runs tests/e2e against real
# API servers on 127.0.0.1.
e2e-tools:
	e2e/build-tools.sh

e2e: setup e2e-tools
	$(BIN)/python -m pytest -m e2e tests/e2e

bench: setup
	$(BIN)/python benchmarks/plan_fleet.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
