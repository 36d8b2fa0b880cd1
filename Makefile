# Each target installs what it needs into .venv first, so it works on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: chat test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

chat: $(STAMP)
	$(BIN)/opsbot chat

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python tests/bench/bench_loop.py
	$(BIN)/python tests/bench/bench_logs.py
	$(BIN)/python tests/bench/bench_redaction.py
	$(BIN)/python tests/bench/bench_slack.py

clean:
	rm -rf $(VENV) build *.egg-info
