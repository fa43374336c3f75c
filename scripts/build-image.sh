#!/usr/bin/env bash
# Builds the toposched container image from Debian packages only, without pulling any base
# image: a minimal Debian root (debootstrap --variant=minbase, from the mirror apt is already
# configured with) in an empty buildah container, the toposched .deb installed into it with
# apt, caches and docs trimmed, then committed with a non-root user (uid/gid 10001, the
# numbers deploy/kubernetes runs it as) and /usr/bin/toposched as the entrypoint.
#   build-image.sh [DEB]   (default: build the package with scripts/package-deb.sh)
#   IMAGE (default toposched:VERSION), STORAGE_DRIVER (default vfs), DEBOOTSTRAP_CACHE (where
#   debootstrap keeps the downloaded packages between runs; default
#   /var/cache/toposched-debootstrap).
# Prints the image name as its last line. Needs root, buildah and debootstrap.
set -euo pipefail
cd "$(dirname "$0")/.."
DRIVER="${STORAGE_DRIVER:-vfs}"
WORK=$(mktemp -d /tmp/toposched-image.XXXXXX)
LOG="$WORK/log"
CTR=""
cleanup() {
  if [ -n "$CTR" ]; then
    buildah --storage-driver "$DRIVER" umount "$CTR" >/dev/null 2>&1 || true
    buildah --storage-driver "$DRIVER" rm "$CTR" >/dev/null 2>&1 || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

STEP_NAME=build-image
# shellcheck source=lib/step.sh
source scripts/lib/step.sh  # (the working directory is the repository root)
bah() { buildah --storage-driver "$DRIVER" "$@"; }

DEB="${1:-}"
if [ -z "$DEB" ]; then
  DEB=$(bash scripts/package-deb.sh | tee /dev/stderr | tail -1)
fi
[ -f "$DEB" ] || { echo "build-image: no package at $DEB" >&2; exit 1; }
VERSION=$(dpkg-deb -f "$DEB" Version)
IMAGE="${IMAGE:-toposched:$VERSION}"

# The release and the mirror are those of this machine's apt configuration.
# shellcheck disable=SC1091
SUITE=$(. /etc/os-release && echo "$VERSION_CODENAME")
# shellcheck disable=SC2016 # apt's format fields, not shell
MIRROR=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 'Identifier: Packages' |
  awk -v s="$SUITE" '$2 == s {print $1; exit}')
[ -n "$MIRROR" ] || { echo "build-image: apt has no source for $SUITE" >&2; exit 1; }

step "empty container (buildah from scratch, $DRIVER storage)" bah from scratch
CTR=$(tail -1 "$LOG")
step "mount it" bah mount "$CTR"
ROOTFS=$(tail -1 "$LOG")
CACHE="${DEBOOTSTRAP_CACHE:-/var/cache/toposched-debootstrap}"
mkdir -p "$CACHE"
step "debootstrap --variant=minbase $SUITE from apt's mirror" \
  debootstrap --variant=minbase --cache-dir="$CACHE" "$SUITE" "$ROOTFS" "$MIRROR"
# apt inside the root: this machine's Debian sources for the release (updates and security
# included), nothing else.
# shellcheck disable=SC2016
apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(COMPONENT)' 'Identifier: Packages' |
  awk -v s="$SUITE" '$2 == s || $2 == s "-updates" || $2 == s "-security" {
    print "deb " $1 " " $2 " " $3 }' | sort -u >"$ROOTFS/etc/apt/sources.list"
cp "$DEB" "$ROOTFS/tmp/toposched.deb"
run() { bah run --isolation chroot "$CTR" -- "$@"; }
# The user first, with fixed ids, so the package's postinst keeps it.
step "user toposched (10001:10001)" run sh -c \
  'groupadd --system --gid 10001 toposched &&
   useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/toposched --no-create-home \
     --shell /usr/sbin/nologin toposched'
step "apt-get install the package" run sh -c \
  'export DEBIAN_FRONTEND=noninteractive &&
   apt-get update -qq && apt-get install -y -qq --no-install-recommends /tmp/toposched.deb'
step "state directory, trim caches and docs" run sh -c \
  'install -d -o toposched -g toposched -m 0750 /var/lib/toposched &&
   apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /tmp/toposched.deb \
     /var/log/apt /var/log/dpkg.log /var/log/bootstrap.log &&
   find /usr/share/doc -mindepth 1 -maxdepth 1 ! -name toposched -exec rm -rf {} + &&
   rm -rf /usr/share/man /usr/share/info /usr/share/locale /usr/share/lintian'
step "configure (entrypoint, user, labels)" bah config \
  --entrypoint '["/usr/bin/toposched"]' --cmd '["--help"]' \
  --user 10001:10001 --workingdir /var/lib/toposched \
  --env TOPOSCHED_DATA_DIR=/usr/share/toposched \
  --label org.opencontainers.image.title=toposched \
  --label org.opencontainers.image.version="$VERSION" \
  --label org.opencontainers.image.description="topology-aware GPU cluster scheduler" \
  --created-by "scripts/build-image.sh" "$CTR"
step "commit $IMAGE" bah commit --rm "$CTR" "$IMAGE"
CTR=""
echo "$IMAGE"
