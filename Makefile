# Each target sets up what it needs: a virtual environment in .venv with kubesched
# installed in editable mode (and its test extras), made on first use.
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin

.PHONY: demo test lint docs clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

demo: $(BIN)/.installed  ## the main job
	$(BIN)/kubesched plugins
	$(BIN)/kubesched config defaults

lint: $(BIN)/.installed
	$(BIN)/ruff check .

test: $(BIN)/.installed lint  ## the whole test suite (lint included)
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) build *.egg-info core/*.egg-info .pytest_cache
