# Each target sets up what it needs: a virtual environment in .venv with kubesched
# installed in editable mode (and its test extras), made on first use.
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin

.PHONY: demo test lint docs clean bench

# The real etcd and kube-apiserver for the tests against an API server (tests/kube), from
# ../shared/k8s when it is there and KUBEBUILDER_ASSETS is not set; else those tests skip.
ASSETS_SH := ../shared/k8s/assets.sh
KUBEBUILDER_ASSETS ?= $(shell [ -x $(ASSETS_SH) ] && $(ASSETS_SH))
export KUBEBUILDER_ASSETS

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,docs]'
	touch $@

demo: $(BIN)/.installed  ## the main job: simulate the quickstart cluster and workload
	$(BIN)/kubesched simulate examples/quickstart

lint: $(BIN)/.installed
	$(BIN)/ruff check .

# One worker per core; a test file stays on one worker, so that its module fixtures (a
# browser, a virtual environment, a Dask cluster) start once. PYTEST_WORKERS=0 runs in one
# process.
PYTEST_WORKERS ?= auto
test: $(BIN)/.installed lint docs  ## the whole test suite (lint and a strict docs build included)
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile

docs: $(BIN)/.installed  ## build the documentation into site/, failing on any warning
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict --quiet

bench: $(BIN)/.installed  ## the standard benchmark runs (benchmarks/workloads.yaml)
	$(BIN)/python benchmarks/run_workloads.py --output benchmarks/results/latest.json

clean:
	rm -rf $(VENV) build *.egg-info core/*.egg-info .pytest_cache site
