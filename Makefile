# Workbench: `make run` serves the gateway with a demo tenant; `make test` runs the suite.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
# PostgreSQL for the second test pass: TEST_DATABASE_URL, or the local default.
PG_TEST_URL ?= $(or $(TEST_DATABASE_URL),postgres://postgres@127.0.0.1:5432/postgres)
# pytest-xdist workers per pass (one test database each): 3 measured fastest on 2 cores,
# the end-to-end tests mostly waiting on subprocesses.
TEST_WORKERS ?= 3
# The benchmarks' FastMCP comparison lives in a virtualenv of its own (never the product's).
FASTMCP_VENV := bench/.fastmcp-venv
FASTMCP_SPEC ?= fastmcp==4.1.2
# The README's snippet for the mcp SDK 1.x (LangChain's adapters pin mcp<2) runs in a
# virtualenv of its own (tests/e2e/test_snippets.py; skipped when the install failed).
MCP1_VENV := tests/.mcp1-venv
MCP1_SPEC ?= mcp>=1.24,<2

.PHONY: run reset test test-sqlite test-postgres lint bench bench-smoke clean sandbox chromium loadbalancers
# Screenshots of the browser tests (tests/browser/) go here.
export WORKBENCH_SCREENSHOTS ?= tests/screenshots

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --upgrade pip
	$(PY) -m pip install -q --disable-pip-version-check -e ".[postgres,redis,demo]"
	touch $@

# tests/package-lock.json: a new npm package (the conformance suite, a server) is installed too.
$(VENV)/.test-installed: $(VENV)/.installed tests/package-lock.json
	$(PY) -m pip install -q --disable-pip-version-check -e ".[test,postgres,redis,demo]"
	@if command -v npm >/dev/null 2>&1; then \
		echo "Node found: installing the npm test servers (tests/package.json)"; \
		npm ci --prefix tests --no-audit --no-fund --loglevel=error; \
	else echo "Node not found: npm-based downstream tests will be skipped"; fi
	touch $@

# Stdio servers run in bubblewrap (WORKBENCH_SANDBOX=bwrap, the default), their network
# through slirp4netns filtered by nftables rules: install what is missing when we can
# (apt-get as root); otherwise say what to install. Skipped with WORKBENCH_SANDBOX=none.
SANDBOX_PACKAGES := bwrap:bubblewrap slirp4netns:slirp4netns nft:nftables scmp_sys_resolver:seccomp
sandbox:
	@missing=""; for pair in $(SANDBOX_PACKAGES); do \
		command -v $${pair%%:*} >/dev/null 2>&1 || \
		missing="$$missing $${pair#*:}"; done; \
	if [ "$$WORKBENCH_SANDBOX" = none ] || [ -z "$$missing" ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "== installing$$missing (the stdio servers' sandbox and its network)"; \
		apt-get install -y -qq $$missing >/dev/null || \
		{ apt-get update -qq && apt-get install -y -qq $$missing >/dev/null; }; \
	else \
		echo "missing:$$missing. Install them (Debian/Ubuntu: sudo apt-get install$$missing;"; \
		echo "Fedora: sudo dnf install bubblewrap slirp4netns nftables), or set WORKBENCH_SANDBOX=none"; \
		echo "to run stdio servers unsandboxed (without slirp4netns and nftables only servers whose"; \
		echo "network is off can start)"; exit 1; \
	fi

# The browser tests drive Debian's Chromium (Playwright's own download is never used):
# installed when missing and we can (apt-get as root); otherwise they are skipped, saying so.
chromium:
	@if command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "== installing chromium (browser tests)"; \
		apt-get install -y -qq chromium >/dev/null || \
		{ apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }; \
	else \
		echo "chromium is missing: the browser tests will be skipped (Debian/Ubuntu:"; \
		echo "sudo apt-get install chromium)"; \
	fi

# The shipped load balancer configurations (deploy/) are checked by HAProxy and nginx
# themselves, and bench/replicas.py runs 3 replicas behind HAProxy: installed when missing
# and we can (apt-get as root, Debian's packages); otherwise those tests skip, saying so.
LB_PACKAGES := haproxy:haproxy nginx:nginx-light
loadbalancers:
	@missing=""; for pair in $(LB_PACKAGES); do \
		command -v $${pair%%:*} >/dev/null 2>&1 || [ -x /usr/sbin/$${pair%%:*} ] || \
		missing="$$missing $${pair#*:}"; done; \
	if [ -z "$$missing" ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "== installing$$missing (the replicas' load balancers, tested)"; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; }; \
	else \
		echo "missing:$$missing: the load balancer tests will be skipped (Debian/Ubuntu:"; \
		echo "sudo apt-get install$$missing)"; \
	fi

# Fresh secrets, readable by the owner alone (0600) from the moment the file exists.
.env: | $(VENV)/.installed
	umask 077 && $(PY) -m workbench_site.envfile > $@.tmp && mv $@.tmp $@

# Slow or greedy clients: idle keep-alive connections close after 5 s, a request's head
# is bounded (16 KiB: h11's option, which workbench_site.http_protocol applies to httptools
# too), and one process holds at most 1,000 connections. uvicorn has no timeout on a
# request's headers or body arriving: in production put a reverse proxy in front (README,
# "Behind a reverse proxy").
# On SIGTERM requests in flight get at most 30 s (after WORKBENCH_DRAIN_SECONDS of draining).
UVICORN_LIMITS := --timeout-keep-alive 5 --h11-max-incomplete-event-size 16384 \
	--limit-concurrency 1000 --backlog 256 --timeout-graceful-shutdown 30
# The HTTP parser and event loop in C (uvicorn[standard]): the bulk of a call's CPU in
# pure Python otherwise (bench/results/issue15.md).
UVICORN_SPEED := --http workbench_site.http_protocol:BoundedHttpToolsProtocol --loop uvloop
# X-Forwarded-For/-Proto are believed only from WORKBENCH_TRUSTED_PROXIES (the env file
# included; accounts/client_address.py): none named, --no-proxy-headers (uvicorn would
# otherwise believe any connection from 127.0.0.1). Expanded as `run` starts, after .env.
UVICORN_PROXY = $(or $(shell $(PY) -m accounts.client_address 2>/dev/null),--no-proxy-headers)

# Each checkout its own: its database, store and .env in it; the demo's git repository and
# its sandbox uid base (claimed beside this user's other checkouts') outside it
# (workbench_site/management/checkout.py). setup_demo runs the server in the foreground and
# prints the credentials once it answers; Ctrl-C or SIGTERM stops it cleanly.
run: $(VENV)/.installed .env sandbox
	@$(PY) -m workbench_site.management.checkout .env
	@chmod 600 .env
	$(PY) manage.py migrate --noinput
	@$(PY) manage.py setup_demo --host $(HOST) --port $(PORT) --serve \
		$(VENV)/bin/uvicorn workbench_site.asgi:application --host $(HOST) --port $(PORT) \
		--no-access-log $(UVICORN_SPEED) $(UVICORN_LIMITS) $(UVICORN_PROXY)

# Start again (README): what `make run` made for this checkout (database, demo, store, uid
# claim) is removed, after saying what; .env and .venv are kept.
reset: $(VENV)/.installed .env
	@$(PY) manage.py reset_demo

test: $(VENV)/.test-installed sandbox chromium loadbalancers
	@echo "== ruff"
	$(VENV)/bin/ruff check .
	@echo "== mypy"
	$(VENV)/bin/mypy
	@if $(PY) -m tests.pg_reachable "$(PG_TEST_URL)"; then \
		$(MAKE) --no-print-directory test-sqlite SQLITE_ALSO="and not once_pg" && \
		$(MAKE) --no-print-directory test-postgres; \
	else \
		echo "== PostgreSQL not reachable at $(PG_TEST_URL): everything runs on SQLite"; \
		$(MAKE) --no-print-directory test-sqlite; \
	fi

# Each test runs in one pass at least; a pass stays under 4 minutes on 2 cores. Tests marked
# `once` (the same whatever the database: gateway processes on a SQLite file of their own,
# say) run in the SQLite pass only; those marked `once_pg` (the same whatever the database
# too) in the PostgreSQL pass when `make test` runs one (SQLITE_ALSO), else here: the two
# passes then take about as long. The SQLite pass makes its test databases from the models
# (--nomigrations: seconds per worker); the migrations themselves run for every
# gateway-process test's database and in the PostgreSQL pass. Tests are dealt out longest
# first (tests/conftest.py), a module sharing one gateway and world to one worker
# (--dist loadgroup).
SQLITE_ALSO ?=
test-sqlite: $(VENV)/.test-installed $(MCP1_VENV)/.installed sandbox chromium loadbalancers
	@echo "== test suite on SQLite ($(TEST_WORKERS) workers); browser screenshots in $(WORKBENCH_SCREENSHOTS)/"
	env -u TEST_DATABASE_URL -u DJANGO_ALLOW_ASYNC_UNSAFE $(PY) -m pytest -q -n $(TEST_WORKERS) \
		--dist loadgroup --nomigrations -m "not bench $(SQLITE_ALSO)"

test-postgres: $(VENV)/.test-installed $(MCP1_VENV)/.installed sandbox chromium loadbalancers
	@echo "== test suite on PostgreSQL ($(PG_TEST_URL), $(TEST_WORKERS) workers), 'once' excepted"
	env -u DJANGO_ALLOW_ASYNC_UNSAFE TEST_DATABASE_URL="$(PG_TEST_URL)" \
		$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup -m "not once and not bench"

# Every benchmark script in --quick mode, and the soak (tests/test_bench_smoke.py): that
# they run, not what they measure. `make test` runs the latency one only.
bench-smoke: $(VENV)/.test-installed sandbox
	env -u TEST_DATABASE_URL -u DJANGO_ALLOW_ASYNC_UNSAFE $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup \
		-m bench tests/test_bench_smoke.py

lint: $(VENV)/.test-installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# A failed FastMCP install is not fatal: the latency table then says it was not measured.
$(FASTMCP_VENV)/.installed:
	@echo "== FastMCP comparison virtualenv ($(FASTMCP_SPEC)) in $(FASTMCP_VENV)"
	-test -x $(FASTMCP_VENV)/bin/python || $(PYTHON) -m venv $(FASTMCP_VENV)
	-$(FASTMCP_VENV)/bin/python -m pip install -q --disable-pip-version-check \
		"$(FASTMCP_SPEC)" "uvicorn[standard]" mcp-server-time && touch $@

# A failed install is not fatal: the 1.x snippet's test then says it was skipped.
$(MCP1_VENV)/.installed:
	@echo "== mcp 1.x virtualenv ($(MCP1_SPEC)) in $(MCP1_VENV), for the README's 1.x snippet"
	-test -x $(MCP1_VENV)/bin/python || $(PYTHON) -m venv $(MCP1_VENV)
	-$(MCP1_VENV)/bin/python -m pip install -q --disable-pip-version-check "$(MCP1_SPEC)" && touch $@

# Benchmarks (bench/README.md): one table, also written to bench/results/latest.md.
bench: $(VENV)/.test-installed $(FASTMCP_VENV)/.installed
	$(PY) bench/run_all.py

clean:
	rm -rf $(VENV) tests/node_modules $(FASTMCP_VENV) $(MCP1_VENV)

# The container image (deploy/image/, docs/container.md): build it, run it on a loopback
# port, call a tool through it. Minutes (the first run also makes a Debian base with
# debootstrap), so not part of `make test`. Root: podman, buildah and debootstrap are
# installed when missing.
.PHONY: image-test
image-test: $(VENV)/.installed
	deploy/image/test.sh
