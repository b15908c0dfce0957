# Workbench: `make run` serves the gateway with a demo tenant; `make test` runs the suite.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
# PostgreSQL for the second test pass: TEST_DATABASE_URL, or the local default.
PG_TEST_URL ?= $(or $(TEST_DATABASE_URL),postgres://postgres@127.0.0.1:5432/postgres)
# The benchmarks' FastMCP comparison lives in a virtualenv of its own (never the product's).
FASTMCP_VENV := bench/.fastmcp-venv
FASTMCP_SPEC ?= fastmcp==4.1.2

.PHONY: run test test-sqlite test-postgres lint bench clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --upgrade pip
	$(PY) -m pip install -q --disable-pip-version-check -e ".[postgres,redis,demo]"
	touch $@

$(VENV)/.test-installed: $(VENV)/.installed
	$(PY) -m pip install -q --disable-pip-version-check -e ".[test,postgres,redis,demo]"
	@if command -v npm >/dev/null 2>&1; then \
		echo "Node found: installing the npm test servers (tests/package.json)"; \
		npm ci --prefix tests --no-audit --no-fund --loglevel=error; \
	else echo "Node not found: npm-based downstream tests will be skipped"; fi
	touch $@

.env: | $(VENV)/.installed
	$(PY) -m workbench_site.envfile > $@

run: $(VENV)/.installed .env
	$(PY) manage.py migrate --noinput
	$(PY) manage.py setup_demo --host $(HOST) --port $(PORT)
	$(VENV)/bin/uvicorn workbench_site.asgi:application --host $(HOST) --port $(PORT) --no-access-log

test: $(VENV)/.test-installed
	@echo "== ruff"
	$(VENV)/bin/ruff check .
	@$(MAKE) --no-print-directory test-sqlite
	@if $(PY) -m tests.pg_reachable "$(PG_TEST_URL)"; then \
		$(MAKE) --no-print-directory test-postgres; \
	else echo "== PostgreSQL not reachable at $(PG_TEST_URL): ran SQLite only"; fi

test-sqlite: $(VENV)/.test-installed
	@echo "== test suite on SQLite"
	env -u TEST_DATABASE_URL $(PY) -m pytest -q

# Tests marked `once` touch no test database (bench smoke runs, in-process fuzzing): they
# ran in the SQLite pass.
test-postgres: $(VENV)/.test-installed
	@echo "== test suite on PostgreSQL ($(PG_TEST_URL)), tests marked 'once' excepted"
	TEST_DATABASE_URL="$(PG_TEST_URL)" $(PY) -m pytest -q -m "not once"

lint: $(VENV)/.test-installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# A failed FastMCP install is not fatal: the latency table then says it was not measured.
$(FASTMCP_VENV)/.installed:
	@echo "== FastMCP comparison virtualenv ($(FASTMCP_SPEC)) in $(FASTMCP_VENV)"
	-test -x $(FASTMCP_VENV)/bin/python || $(PYTHON) -m venv $(FASTMCP_VENV)
	-$(FASTMCP_VENV)/bin/python -m pip install -q --disable-pip-version-check \
		"$(FASTMCP_SPEC)" uvicorn mcp-server-time && touch $@

# Benchmarks (bench/README.md): one table, also written to bench/results/latest.md.
bench: $(VENV)/.test-installed $(FASTMCP_VENV)/.installed
	$(PY) bench/run_all.py

clean:
	rm -rf $(VENV) tests/node_modules $(FASTMCP_VENV)
