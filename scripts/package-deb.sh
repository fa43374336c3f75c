#!/usr/bin/env bash
# Builds the Debian package of toposched from this checkout: the binary (Debian's hardening
# flags, stripped), its data under /usr/share/toposched, docs, the generated man page and shell
# completions (`cmake --install`), the systemd units, /etc/toposched/toposched.env as a
# conffile and the maintainer scripts in packaging/debian. Runtime dependencies are computed by
# dpkg-shlibdeps. Prints the path of the .deb as its last line.
#   BUILD_DIR (default build-deb): a build directory of its own, configured for prefix /usr.
#   OUT_DIR (default dist): where the .deb goes.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${BUILD_DIR:-build-deb}"
OUT_DIR="${OUT_DIR:-dist}"
JOBS="${JOBS:-$(nproc)}"
WORK=$(mktemp -d /tmp/toposched-deb.XXXXXX)
LOG="$WORK/log"
trap 'rm -rf "$WORK"' EXIT

STEP_NAME=package-deb
# shellcheck source=lib/step.sh
source scripts/lib/step.sh  # (the working directory is the repository root)

# Debian's build flags (hardening: fortify, stack protector, relro, bindnow, PIE), taken once
# when the build directory is first configured.
configure() {
  local cxxflags ldflags
  export DEB_BUILD_MAINT_OPTIONS=hardening=+all
  cxxflags="$(dpkg-buildflags --get CPPFLAGS) $(dpkg-buildflags --get CXXFLAGS)"
  # Without -g: the package ships the binary stripped (debianize, below) and no debug-symbols
  # package, so debug info would only be built to be thrown away (a third of the compile time
  # of the heaviest sources, and a 300 MB link). A unity build (each module's sources compiled in
  # batches): about half the compile time of building file by file.
  cxxflags=$(printf '%s\n' "$cxxflags" | sed -E 's/(^| )-g( |$)/ /g')
  ldflags=$(dpkg-buildflags --get LDFLAGS)
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" -DCMAKE_CXX_FLAGS="$cxxflags" -DCMAKE_EXE_LINKER_FLAGS="$ldflags" \
    -DCMAKE_INSTALL_PREFIX=/usr -DTOPOSCHED_BENCH=OFF -DCMAKE_UNITY_BUILD=ON \
    -DTOPOSCHED_ZSH_COMPLETION_DIR=share/zsh/vendor-completions
}
if [ -f "$BUILD_DIR/CMakeCache.txt" ]; then
  step "configure $BUILD_DIR (prefix /usr)" cmake -S . -B "$BUILD_DIR" -DCMAKE_INSTALL_PREFIX=/usr \
    -DTOPOSCHED_ZSH_COMPLETION_DIR=share/zsh/vendor-completions
else
  step "configure $BUILD_DIR (prefix /usr, dpkg-buildflags)" configure
fi
step "build toposched" ninja -C "$BUILD_DIR" -j "$JOBS" toposched

STAGE="$WORK/stage"
step "cmake --install into the package tree" env DESTDIR="$STAGE" cmake --install "$BUILD_DIR"
VERSION=$("$STAGE/usr/bin/toposched" --version | awk '{print $2}')
ARCH=$(dpkg --print-architecture)
DOC="$STAGE/usr/share/doc/toposched"

debianize() {
  # Policy: stripped binary, compressed man page and changelog, copyright beside the docs.
  strip --remove-section=.comment --remove-section=.note --strip-unneeded \
    "$STAGE/usr/bin/toposched"
  gzip -9n "$STAGE/usr/share/man/man1/toposched.1"
  install -m 0644 packaging/debian/copyright "$DOC/copyright"
  sed -e "s/@VERSION@/$VERSION/" \
    -e "s/@DATE@/$(date -R -d "@$(git log -1 --format=%ct 2>/dev/null || date +%s)")/" \
    packaging/debian/changelog | gzip -9n >"$DOC/changelog.gz"  # a native package's name
  install -D -m 0644 -t "$STAGE/lib/systemd/system" packaging/systemd/toposched.service \
    packaging/systemd/toposched-slurm-watch.service
  install -D -m 0644 packaging/etc/toposched.env "$STAGE/etc/toposched/toposched.env"
  if [ -s packaging/debian/lintian-overrides ]; then
    install -D -m 0644 packaging/debian/lintian-overrides \
      "$STAGE/usr/share/lintian/overrides/toposched"
  fi
  find "$STAGE" -type d -exec chmod 0755 {} +
  find "$STAGE" -type f ! -path '*/usr/bin/*' -exec chmod 0644 {} +
}
step "Debian layout (strip, gzip, units, conffile)" debianize

# dpkg-shlibdeps reads debian/control of a source package: give it a minimal one.
shlibdeps() {
  mkdir -p "$WORK/src/debian"
  printf 'Source: toposched\n\nPackage: toposched\nArchitecture: any\n' \
    >"$WORK/src/debian/control"
  (cd "$WORK/src" && dpkg-shlibdeps -O "$STAGE/usr/bin/toposched") >"$WORK/shlibs"
}
step "runtime dependencies (dpkg-shlibdeps)" shlibdeps
DEPENDS="adduser, $(sed -n 's/^shlibs:Depends=//p' "$WORK/shlibs")"
# The device plugin's gRPC and protobuf runtimes (Debian 12: libgrpc++1.51, libprotobuf32) come
# from the binary's links; a package without them would install a binary that cannot start.
for lib in 'libgrpc++' 'libprotobuf'; do
  case "$DEPENDS" in
    *"$lib"*) ;;
    *) echo "package-deb: FAILED: Depends lacks $lib: $DEPENDS" >&2; exit 1 ;;
  esac
done

control() {
  mkdir -p "$STAGE/DEBIAN"
  sed -e "s/@VERSION@/$VERSION/" -e "s/@ARCH@/$ARCH/" -e "s/@DEPENDS@/$DEPENDS/" \
    -e "s/@INSTALLED_SIZE@/$(du -sk --exclude=DEBIAN "$STAGE" | cut -f1)/" \
    packaging/debian/control.in >"$STAGE/DEBIAN/control"
  install -m 0755 packaging/debian/postinst packaging/debian/prerm packaging/debian/postrm \
    "$STAGE/DEBIAN/"
  install -m 0644 packaging/debian/conffiles "$STAGE/DEBIAN/"
  (cd "$STAGE" && find . -type f ! -path './DEBIAN/*' ! -path './etc/*' -printf '%P\0' |
    LC_ALL=C sort -z | xargs -0 md5sum) >"$STAGE/DEBIAN/md5sums"
}
step "control, maintainer scripts, md5sums" control

mkdir -p "$OUT_DIR"
DEB="$OUT_DIR/toposched_${VERSION}_${ARCH}.deb"
step "dpkg-deb --build $DEB" dpkg-deb --root-owner-group -Zxz --build "$STAGE" "$DEB"
echo "package-deb: Depends: $DEPENDS"
realpath "$DEB"
