#!/bin/bash
# The image's test (`make image-test`; minutes, so not part of `make test`): build the
# image, run it on a loopback port with the flags its sandbox needs, create a tenant, a
# toolbox with one stdio server (mcp-server-time, in the image; network on, the default)
# and an API key with manage.py in the container, call the tool through the gateway with
# the real mcp client (this checkout's .venv), check the answer and that the server ran in
# the sandbox; then restart the container and call again. Prints the image's size and the
# times from start to first answer.
#
# Environment:
#   RUN_FLAGS      podman run flags for the sandbox (default: SANDBOX_FLAGS below)
#   EXTRA_ENV      more NAME=VALUE settings for the container, space-separated
#   SERVER_NETWORK=false  the server's network off (no slirp4netns, no nft rules)
#   SKIP_BUILD=1   use the image as it is (deploy/image/flags.sh)
#   EXPECT=fail    succeed when the call fails (flags.sh, trying without a flag)
#   PORT           the loopback port (default 18437)
# Root: podman here runs rootful (docs/container.md says what changes rootless).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# What the sandbox needs of the container (docs/container.md: each measured without).
SANDBOX_FLAGS="--cap-add=SYS_ADMIN --cap-add=NET_ADMIN --device=/dev/net/tun"
RUN_FLAGS=${RUN_FLAGS-$SANDBOX_FLAGS}
PORT=${PORT:-18437}
NAME=workbench-image-test-$$
PY="$REPO_ROOT/.venv/bin/python"
TENANT=acme
TOOLBOX=clock
SANDBOX=bwrap
[[ " ${EXTRA_ENV:-} " == *" WORKBENCH_SANDBOX=none "* ]] && SANDBOX=none

[ -x "$PY" ] || { echo "no $PY: run make .venv/.installed first" >&2; exit 1; }
ensure_tools
if [ -z "${SKIP_BUILD:-}" ]; then
    build_started=$(date +%s)
    "$REPO_ROOT/deploy/image/build.sh"
    say "image built in $(($(date +%s) - build_started)) s"
fi

work=$(mktemp -d)
keep_logs=""
cleanup() {
    if [ -n "$keep_logs" ]; then
        say "the container's log:"
        pm logs "$NAME" 2>&1 | grep -v '  Applying ' | tail -n 30 >&2 || true
    fi
    pm rm -f -t 5 "$NAME" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

# /readyz answers 200 (migrations done, uvicorn serving), within 120 s.
wait_ready() {
    "$PY" - "http://127.0.0.1:$PORT/readyz" <<'PY'
import sys, time, urllib.error, urllib.request
url, deadline = sys.argv[1], time.monotonic() + 120
while True:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            print(answer.read().decode(), file=sys.stderr)
            break
    except (urllib.error.URLError, ConnectionError, OSError):
        if time.monotonic() > deadline:
            sys.exit(f"{url} did not answer 200 within 120 s")
        time.sleep(0.1)
PY
}

# open_toolbox + use_tool with the mcp client; the JSON report on stdout; status 1: failed.
call_tool() {
    "$PY" "$REPO_ROOT/deploy/image/call.py" "http://127.0.0.1:$PORT/mcp/t/$TENANT" "$key" \
        "$TOOLBOX" time get_current_time '{"timezone": "UTC"}'
}

# CPU seconds the container has used (its cgroup's count: the load of the machine aside).
# shellcheck disable=SC2016 # expanded in the container
cpu_seconds() {
    pm exec "$NAME" sh -c 'if [ -f /sys/fs/cgroup/cpuacct/cpuacct.usage ]; then
        awk "{ printf \"%.1f\", \$1 / 1e9 }" /sys/fs/cgroup/cpuacct/cpuacct.usage
    else awk "/^usage_usec/ { printf \"%.1f\", \$2 / 1e6 }" /sys/fs/cgroup/cpu.stat; fi' 2>/dev/null || echo "?"
}

check_answer() {
    [ "$1" = 0 ] || { say "FAIL: the call failed"; exit 1; }
    grep -q '\\"timezone\\": \\"UTC\\"' <<<"$2" || { say "FAIL: the answer is not the time in UTC"; exit 1; }
}

# Fresh secrets for this run (0600), DEBUG off as in production.
(umask 077 && "$PY" -m workbench_site.envfile | sed 's/^DEBUG=.*/DEBUG=false/' >"$work/env")
echo "ALLOWED_HOSTS=127.0.0.1,localhost" >>"$work/env"
for setting in ${EXTRA_ENV:-}; do echo "$setting" >>"$work/env"; done

say "running $IMAGE on 127.0.0.1:$PORT with: ${RUN_FLAGS:-(no flags)} ${EXTRA_ENV:-}"
keep_logs=1
started=$(now)
# shellcheck disable=SC2046,SC2086
pm run -d --name "$NAME" -p "127.0.0.1:$PORT:8000" --env-file "$work/env" \
    $(run_limits) $RUN_FLAGS "$IMAGE" >/dev/null
wait_ready
ready=$(since "$started")
ready_cpu=$(cpu_seconds)
say "ready (/readyz 200) $ready s after podman run ($ready_cpu CPU s)"

# A tenant, a toolbox with one stdio server, a key: manage.py in the container.
setup_started=$(now)
printf '{"mcpServers": {"time": {"command": "/srv/workbench/app/.venv/bin/python", "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"], "network": %s}}}' \
    "${SERVER_NETWORK:-true}" |
    pm exec -i "$NAME" python manage.py import_config - --tenant "$TENANT" --create-tenant --toolbox "$TOOLBOX" >&2
key=$(pm exec "$NAME" python manage.py create_api_key "$TENANT" --label image-test | tail -n 1)
setup=$(since "$setup_started")

call_started=$(now)
set +e
report=$(call_tool)
called=$?
set -e
answered=$(since "$started")
call_took=$(since "$call_started")
echo "$report"

if [ "${EXPECT:-ok}" = fail ]; then
    [ "$called" != 0 ] || { say "FAIL: the call succeeded, expected it to fail"; exit 1; }
    say "the call failed, as expected"
    keep_logs=""
    exit 0
fi
check_answer "$called" "$report"

# Where the server ran. Sandboxed: as the tenant's own uid (200000 + its id), in a PID
# namespace of its own (bwrap's), with network interfaces other than the gateway's (its
# namespace's own: loopback, and slirp4netns' tap0 when its network is on). Unsandboxed
# (WORKBENCH_SANDBOX=none): as the gateway's uid, in its namespaces.
pm exec -i "$NAME" python - "$SANDBOX" <<'PY' >&2
import os, sys
def interfaces(pid):
    with open(f"/proc/{pid}/net/dev") as f:
        return sorted(line.split(":")[0].strip() for line in f if ":" in line)
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
    except OSError:
        continue
    if b"mcp_server_time" not in argv or not argv[0].endswith(b"python"):
        continue
    with open(f"/proc/{pid}/status") as f:
        status = dict(line.split(":", 1) for line in f)
    uid, nspid = int(status["Uid"].split()[0]), status["NSpid"].split()
    own, gateway = interfaces(pid), interfaces(os.getpid())
    with open(f"/proc/{pid}/cgroup") as f:
        memory = [line.split(":")[2].strip() for line in f if ":memory:" in line or line.startswith("0::")]
    print(f"the server: pid {pid}, uid {uid}, pid {nspid[-1]} in its namespace, "
          f"interfaces {' '.join(own)} (the gateway's: {' '.join(gateway)}), memory cgroup {memory[0]}")
    sandboxed = uid >= 200000 and len(nspid) > 1 and own != gateway
    unsandboxed = uid == os.getuid() and len(nspid) == 1 and own == gateway
    sys.exit(0 if (sandboxed if sys.argv[1] == "bwrap" else unsandboxed) else 1)
sys.exit("no mcp_server_time process found")
PY

# A restart (the database migrated, the server to start again): start to first answer.
pm stop -t 45 "$NAME" >/dev/null
restarted=$(now)
pm start "$NAME" >/dev/null
wait_ready
again_ready=$(since "$restarted")
again_cpu=$(cpu_seconds)
set +e
report=$(call_tool)
called=$?
set -e
again_answered=$(since "$restarted")
echo "$report"
check_answer "$called" "$report"
keep_logs=""

warnings=$(pm logs "$NAME" 2>&1 | grep 'WARNING' | cut -c1-220 | sort -u -k4 || true)
[ -z "$warnings" ] || { say "the gateway's warnings:"; echo "$warnings" >&2; }
size=$(pm image inspect --format '{{.Size}}' "$IMAGE")
say "image $IMAGE: $((size / 1000000)) MB"
say "first start: ready in $ready s ($ready_cpu CPU s, migrations included); tenant, toolbox and key (manage.py x2) $setup s;" \
    "first call (open_toolbox + use_tool, the server cold) $call_took s; start to first answer $answered s"
say "restart: ready in $again_ready s ($again_cpu CPU s); start to first answer $again_answered s"
say "load average: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)"
say "PASS"
