# Shared by deploy/image/*.sh (sourced, not run).
# shellcheck disable=SC2034 # used by the scripts that source this
IMAGE=${IMAGE:-localhost/workbench:latest}
# shellcheck disable=SC2034
REPO_ROOT=$(cd "$(dirname "$0")/../.." && pwd)

say() { echo "== $*" >&2; }

# podman, buildah and debootstrap from Debian's packages when missing (as root, like the
# Makefile's `sandbox` target). runc too where crun cannot run: crun refuses a host whose
# cgroups are "hybrid" (v1 controllers with a v2 mount beside them: "cgroups in hybrid
# mode not supported"), runc runs there.
ensure_tools() {
    missing=""
    for pair in podman:podman buildah:buildah debootstrap:debootstrap; do
        command -v "${pair%%:*}" >/dev/null 2>&1 || missing="$missing ${pair#*:}"
    done
    if cgroup_hybrid && ! command -v runc >/dev/null 2>&1; then missing="$missing runc"; fi
    [ -z "$missing" ] && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        say "installing$missing"
        # shellcheck disable=SC2086
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null ||
            { apt-get update -qq &&
              DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null; }
    else
        echo "missing:$missing (Debian/Ubuntu: sudo apt-get install$missing)" >&2
        return 1
    fi
}

cgroup_hybrid() {
    [ ! -f /sys/fs/cgroup/cgroup.controllers ] && grep -q ' /sys/fs/cgroup/unified cgroup2 ' /proc/mounts
}

# podman with the runtime this host needs (PODMAN_RUNTIME to choose one).
pm() {
    if [ -n "${PODMAN_RUNTIME:-}" ]; then
        podman --runtime "$PODMAN_RUNTIME" "$@"
    elif cgroup_hybrid; then
        podman --runtime runc "$@"
    else
        podman "$@"
    fi
}

# podman's default limits (open files 1048576, processes 4194304) are set only by an
# engine holding CAP_SYS_RESOURCE; where it lacks it (as here), the container would not
# start ("error setting rlimit"): ask for what this process has, and at most the process
# limit conmon is given.
run_limits() {
    if grep -q '^CapEff:' /proc/self/status &&
        [ $((0x$(awk '/^CapEff:/ { print $2 }' /proc/self/status) >> 24 & 1)) = 0 ]; then
        nproc=$(ulimit -Hu)
        [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ] && nproc=32768
        echo "--ulimit nofile=$(ulimit -Hn):$(ulimit -Hn) --ulimit nproc=$nproc:$nproc"
    fi
}
