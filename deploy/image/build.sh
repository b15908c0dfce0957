#!/bin/bash
# Build the image (IMAGE, default localhost/workbench:latest) from this checkout.
#
#   deploy/image/build.sh                      # on the debootstrap base (deploy/image/base.sh)
#   BASE=docker.io/library/python:3.11-slim-bookworm deploy/image/build.sh
#
# The host's CA bundle (PIP_CERT, where set) is shown to the build's RUN steps, never kept
# in the image: pip then trusts what pip here trusts (a TLS-inspecting proxy's CA).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
ensure_tools
BASE=${BASE:-$("$REPO_ROOT/deploy/image/base.sh")}
set -- --build-arg "BASE=$BASE"
if [ -n "${PIP_CERT:-}" ] && [ -f "$PIP_CERT" ]; then
    set -- "$@" --volume "$PIP_CERT:/run/host-ca.crt:ro" --build-arg CA_BUNDLE=/run/host-ca.crt
fi
say "building $IMAGE on $BASE"
cd "$REPO_ROOT"
pm build --quiet --layers -f deploy/image/Containerfile \
    --ignorefile deploy/image/Containerfile.dockerignore "$@" -t "$IMAGE" . >/dev/null
say "built $IMAGE"
