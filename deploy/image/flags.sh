#!/bin/bash
# Which podman run flags the sandbox needs in the container: deploy/image/test.sh run with
# the minimal set, then without each flag, and the alternatives, one container each (a
# minute or two each). Prints a Markdown table (docs/container.md, "Flags, measured").
#
#   deploy/image/flags.sh            # builds the image first (deploy/image/build.sh)
#   SKIP_BUILD=1 deploy/image/flags.sh
#   ONLY='*network*' SKIP_BUILD=1 deploy/image/flags.sh    # the variants matching a pattern
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ -n "${SKIP_BUILD:-}" ] || "$REPO_ROOT/deploy/image/build.sh"

TUN="--device=/dev/net/tun"
ADMIN="--cap-add=SYS_ADMIN"
NET="--cap-add=NET_ADMIN"
# A user namespace: container uids 0-299999 are host uids 1000000-1299999 (the tenants'
# 200000+N inside included).
USERNS="--uidmap=0:1000000:300000 --gidmap=0:1000000:300000"
# cgroup v1: the container under a parent of our own whose memory hierarchy is bound
# writable at the container's /sys/fs/cgroup/memory (docs/container.md).
CGROUP_PARENT=/workbench-image
CGROUP="--cgroup-parent=$CGROUP_PARENT --volume=/sys/fs/cgroup/memory$CGROUP_PARENT:/sys/fs/cgroup/memory:rw"

# label | RUN_FLAGS | EXTRA_ENV | SERVER_NETWORK | expected
variants=(
    "the minimal set|$ADMIN $NET $TUN||true|ok"
    "without SYS_ADMIN|$NET $TUN||true|fail"
    "without NET_ADMIN|$ADMIN $TUN||true|fail"
    "without /dev/net/tun|$ADMIN $NET||true|fail"
    "MKNOD instead of the device (the entry point makes it)|$ADMIN $NET --cap-add=MKNOD||true|ok"
    "no flags|||true|fail"
    "network off: SYS_ADMIN alone|$ADMIN||false|fail"
    "network off: no device|$ADMIN $NET||false|ok"
    "seccomp=unconfined instead of SYS_ADMIN|$NET $TUN --security-opt=seccomp=unconfined||true|fail"
    "in a user namespace|$ADMIN $NET $TUN $USERNS||true|ok"
    "memory cgroup delegated (v1)|$ADMIN $NET $TUN $CGROUP||true|ok"
    "WORKBENCH_SANDBOX=none, no flags||WORKBENCH_SANDBOX=none|true|ok"
    "WORKBENCH_SANDBOX=none, non-root (--user workbench)|--user=workbench|WORKBENCH_SANDBOX=none|true|ok"
)
mkdir -p "/sys/fs/cgroup/memory$CGROUP_PARENT" 2>/dev/null || true

echo "| variant | flags | expected | result | what the client heard, or the gateway's warnings |"
echo "| --- | --- | --- | --- | --- |"
for variant in "${variants[@]}"; do
    IFS='|' read -r label flags extra network expected <<<"$variant"
    # shellcheck disable=SC2053 # ONLY is a pattern
    [[ "$label" == ${ONLY:-*} ]] || continue
    log=$(mktemp)
    if RUN_FLAGS="$flags" EXTRA_ENV="$extra" SERVER_NETWORK="$network" EXPECT="$expected" \
        SKIP_BUILD=1 "$REPO_ROOT/deploy/image/test.sh" >"$log" 2>&1; then
        result=$expected
    else
        result="UNEXPECTED (expected $expected)"
    fi
    said=$(grep -o '"error": "[^}]*' "$log" | head -n 1 | cut -c1-300 || true)
    [ -n "$said" ] || said=$( (grep -E 'the server:' "$log"; grep -E 'WARNING' "$log" |
        sed 's/^.*WARNING [a-z.]* //' | cut -c1-100 | sort -u) | paste -sd ';' || true)
    echo "| $label | \`${flags:-none}${extra:+ -e $extra}\`$([ "$network" = false ] && echo ', the server'"'"'s network off') | $expected | $result | ${said//|/\\|} |"
    [ "$result" = "$expected" ] || tail -n 30 "$log" >&2
    rm -f "$log"
done
# The groups the gateways left under our parent (empty once their containers are gone).
rmdir "/sys/fs/cgroup/memory$CGROUP_PARENT"/workbench/*/ "/sys/fs/cgroup/memory$CGROUP_PARENT/workbench" 2>/dev/null || true
