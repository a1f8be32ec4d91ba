# The two commands of the README, `make demo` and `make test`, and the rest. Each installs into .venv
# only what it uses (the extras of pyproject.toml), once: a stamp per level records it.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/pip install --quiet --disable-pip-version-check

.PHONY: setup plan demo demo-clean test e2e-tools e2e bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# The CLI alone (validate, plan, explain, capacity): no Pulumi, no cloud SDK.
$(VENV)/.cli: pyproject.toml | $(BIN)/python
	@echo "installing modelplane (the CLI) into $(VENV)"
	$(PIP) -e .
	touch $@

# The Pulumi program on existing clusters: what the local fleet of `make demo` needs.
$(VENV)/.demo: pyproject.toml | $(BIN)/python
	@echo "installing modelplane with Pulumi and the Kubernetes provider into $(VENV)"
	$(PIP) -e '.[pulumi]'
	touch $@

# Everything: every cloud's SDK, the Kubernetes client and the test tools.
$(VENV)/.test: pyproject.toml | $(BIN)/python
	@echo "installing modelplane with every cloud's SDK and the test tools into $(VENV)"
	$(PIP) -e '.[clouds,control,test]'
	touch $@

setup: $(VENV)/.test

# The offline plan of the multi-cloud example: where every replica runs, what it costs.
plan: $(VENV)/.cli
	$(BIN)/modelplane plan examples/multi-cloud

# `pulumi preview` and `pulumi up` on a local fleet of two kube-apiservers (modelplane/local/demo.py).
demo: $(VENV)/.demo
	@$(BIN)/python -m modelplane.local.demo

demo-clean:
	rm -rf .demo

test: $(VENV)/.test
	$(BIN)/python -m pytest

# The end-to-end suite: builds the toolchain from the Go module proxy on first use (about 15 minutes
# cold on 2 cores, cached per user under ~/.cache/modelplane-e2e), then runs tests/e2e against real
# API servers on 127.0.0.1.
e2e-tools:
	e2e/build-tools.sh

e2e: $(VENV)/.test e2e-tools
	$(BIN)/python -m pytest -m e2e tests/e2e

bench: $(VENV)/.cli
	$(BIN)/python benchmarks/plan_fleet.py

clean: demo-clean
	rm -rf $(VENV) .pytest_cache .hypothesis
