#!/bin/bash
# A Debian 12 (bookworm) base image made with debootstrap from the Debian mirror apt uses
# here, for building the image where no image registry can be reached. Cached: the podman
# image (BASE_TAG) is reused, else the root file system's tarball under CACHE_DIR is
# imported again, else debootstrap runs (about 3 minutes). Prints the image's name.
#
#   deploy/image/base.sh            # -> localhost/workbench-base:bookworm
#   BASE_REFRESH=1 deploy/image/base.sh   # make it anew (newer packages)
#
# Root: debootstrap makes device nodes and chowns files.
set -euo pipefail
BASE_TAG=${BASE_TAG:-localhost/workbench-base:bookworm}
CACHE_DIR=${CACHE_DIR:-/var/tmp/workbench-image}
SUITE=bookworm
TARBALL="$CACHE_DIR/base-$SUITE.tar"

say() { echo "== $*" >&2; }

# The URI apt uses for a suite: deb822 .sources files first, then one-line .list files.
mirror_for() {
    suite=$1
    for file in /etc/apt/sources.list.d/*.sources; do
        [ -f "$file" ] || continue
        awk -v want="$suite" 'BEGIN { RS = ""; FS = "\n" }
            { uri = ""; ok = 0
              for (i = 1; i <= NF; i++) {
                  if ($i ~ /^[ \t]*#/) continue
                  if ($i ~ /^URIs:/) { split($i, u, /[ \t]+/); uri = u[2] }
                  if ($i ~ /^Suites:/) { n = split($i, s, /[ \t]+/)
                      for (j = 2; j <= n; j++) if (s[j] == want) ok = 1 }
              }
              if (ok && uri != "") { print uri; exit } }' "$file"
    done | head -n 1 | grep . && return 0
    cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
        awk -v want="$suite" '$1 == "deb" { i = 2; if ($2 ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
            if ($(i + 1) == want) { print $i; exit } }' | grep .
}

if [ -z "${BASE_REFRESH:-}" ] && podman image exists "$BASE_TAG"; then
    say "base image $BASE_TAG (cached)"
    echo "$BASE_TAG"
    exit 0
fi
if [ -n "${BASE_REFRESH:-}" ] || [ ! -s "$TARBALL" ]; then
    MIRROR=${DEBIAN_MIRROR:-$(mirror_for "$SUITE" || echo http://deb.debian.org/debian)}
    SECURITY=${DEBIAN_SECURITY_MIRROR:-$(mirror_for "$SUITE-security" || echo http://deb.debian.org/debian-security)}
    say "debootstrap $SUITE from $MIRROR (minbase; a few minutes)"
    mkdir -p "$CACHE_DIR"
    rootfs=$(mktemp -d "$CACHE_DIR/rootfs.XXXXXX")
    trap 'rm -rf "$rootfs"' EXIT
    debootstrap --variant=minbase "$SUITE" "$rootfs" "$MIRROR" >"$CACHE_DIR/debootstrap.log" 2>&1 || {
        tail -n 20 "$CACHE_DIR/debootstrap.log" >&2
        exit 1
    }
    # Updates and security fixes too, from the same mirrors, as apt here has them.
    rm -f "$rootfs/etc/apt/sources.list"
    cat >"$rootfs/etc/apt/sources.list.d/debian.sources" <<SOURCES
Types: deb
URIs: $MIRROR
Suites: $SUITE $SUITE-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $SECURITY
Suites: $SUITE-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
    # What a container never needs, now and in what is installed later (as Debian's own
    # slim images do): downloaded packages, package lists and caches, docs but for the
    # copyrights, man pages, translations.
    cat >"$rootfs/etc/dpkg/dpkg.cfg.d/01-container-slim" <<'DPKG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
DPKG
    find "$rootfs/usr/share/doc" -type f ! -name copyright -delete
    rm -rf "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
        "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/locale/* \
        "$rootfs"/var/log/*.log "$rootfs"/var/cache/debconf/*-old
    tar --numeric-owner --xattrs -C "$rootfs" -cf "$TARBALL.tmp" .
    mv "$TARBALL.tmp" "$TARBALL"
fi
say "importing $TARBALL as $BASE_TAG"
podman import --quiet --change 'CMD ["/bin/bash"]' --change 'ENV LANG=C.UTF-8' \
    "$TARBALL" "$BASE_TAG" >/dev/null
echo "$BASE_TAG"
