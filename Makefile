# Each target installs what it needs into .venv first, so it works on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# `chat` needs only what opsbot needs; `test` and the benches add the test toolchain.
RUNTIME := $(VENV)/.runtime
STAMP := $(VENV)/.installed
# pytest-xdist workers for `make test`: the tests mostly wait on servers and subprocesses, so more
# workers than cores; every test starts its own servers on free ports.
TEST_WORKERS ?= 4

.PHONY: chat test bench bench-faults bench-soak clean

# `make test` on a fresh machine installs opsbot's venv and the MCP servers' side by side.
ifeq ($(MAKECMDGOALS),test)
MAKEFLAGS += -j2
endif

$(RUNTIME): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	touch $(RUNTIME)

$(STAMP): $(RUNTIME)
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

# Real MCP servers from PyPI in a venv of their own, as users run them (tests/test_mcp_servers.py).
MCP_VENV := .venv-mcp
MCP_STAMP := $(MCP_VENV)/.installed

$(MCP_STAMP): Makefile
	$(PYTHON) -m venv $(MCP_VENV)
	$(MCP_VENV)/bin/pip install --quiet 'mcp-server-git==2026.10.19' 'mcp-server-time==2026.10.19' \
		'prometheus-mcp-server==1.6.2'
	touch $(MCP_STAMP)

chat: $(RUNTIME)
	$(BIN)/opsbot chat

# Bytecode is written even where the environment says not to (PYTHONDONTWRITEBYTECODE): else
# every worker rewrites every test module's asserts at each start (11 s of CPU each) and every
# `opsbot` process a test starts compiles opsbot again.
test: $(STAMP) .typecheck/opsbot $(MCP_STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n $(TEST_WORKERS)

bench: $(STAMP)
	$(BIN)/python tests/bench/bench_loop.py
	$(BIN)/python tests/bench/bench_evidence.py
	$(BIN)/python tests/bench/bench_logs.py
	$(BIN)/python tests/bench/bench_metrics.py
	$(BIN)/python tests/bench/bench_redaction.py
	$(BIN)/python tests/bench/bench_slack.py
	$(BIN)/python tests/bench/bench_startup.py
	$(BIN)/python tests/bench/bench_storm.py
	$(BIN)/python tests/bench/bench_incidents.py

# Minutes each, so not part of `bench`: exactly one answer under faults, and over a long run.
bench-faults: $(STAMP)
	$(BIN)/python tests/bench/bench_faults.py

bench-soak: $(STAMP)
	$(BIN)/python tests/bench/bench_soak.py

# mypy reads the `opsbot` package through these links (pyproject.toml, [tool.mypy]).
.typecheck/opsbot:
	mkdir -p $@
	for part in bot tools config; do ln -sfn ../../$$part $@/$$part; done

clean:
	rm -rf $(VENV) $(MCP_VENV) .typecheck build *.egg-info
