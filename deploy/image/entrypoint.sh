#!/bin/sh
# The image's entry point. `serve` (the default): migrate the database, then serve the
# gateway with uvicorn as `make run` does (its UVICORN_SPEED and UVICORN_LIMITS flags, and
# the proxy flags accounts.client_address derives from WORKBENCH_TRUSTED_PROXIES).
# Anything else runs as given, in the app directory: `python manage.py create_tenant acme`.
#
# Environment: the settings' own (workbench_site/settings.py: SECRET_KEY, ENCRYPTION_KEYS,
# DATABASE_URL, ALLOWED_HOSTS, WORKBENCH_*), and
#   WORKBENCH_HOST, WORKBENCH_PORT   where uvicorn listens (0.0.0.0, 8000)
#   WORKBENCH_MIGRATE                `false`: serve without migrating (several replicas:
#                                    one migration step before them, deploy/kubernetes/)
set -eu
cd /srv/workbench/app

# slirp4netns (a sandboxed server's network) opens /dev/net/tun. A runtime that allows the
# device but does not create it (runc's default rules list c 10:200) lets root make
# it; where that is refused, servers whose network is off still start.
if [ ! -e /dev/net/tun ] && [ "$(id -u)" = 0 ]; then
    { mkdir -p /dev/net && mknod -m 0666 /dev/net/tun c 10 200; } 2>/dev/null || true
fi
# An empty volume (a Kubernetes emptyDir) has no data directory yet.
{ mkdir -p /var/lib/workbench/data && chmod 0700 /var/lib/workbench/data; } 2>/dev/null || true

if [ "${1:-serve}" != serve ]; then
    exec "$@"
fi
[ $# -gt 0 ] && shift
case "${WORKBENCH_MIGRATE:-true}" in
    false|0|no|off) ;;
    *) python manage.py migrate --noinput ;;
esac
proxy=$(python -m accounts.client_address)  # settings that do not load stop here
# shellcheck disable=SC2086 # the proxy flags are words
exec uvicorn workbench_site.asgi:application \
    --host "${WORKBENCH_HOST:-0.0.0.0}" --port "${WORKBENCH_PORT:-8000}" --no-access-log \
    --http workbench_site.http_protocol:BoundedHttpToolsProtocol --loop uvloop \
    --timeout-keep-alive 5 --h11-max-incomplete-event-size 16384 \
    --limit-concurrency 1000 --backlog 256 --timeout-graceful-shutdown 30 \
    $proxy "$@"
