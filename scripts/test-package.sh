#!/usr/bin/env bash
# The packaging stage of CI. Proves that toposched installs and runs like packaged software:
#  1. the Debian package builds from a clean clone of HEAD (scripts/package-deb.sh) and lintian
#     finds no error or warning in it;
#  2. `dpkg -i` (+ `apt-get install -f`) installs it on this machine, and the INSTALLED
#     /usr/bin/toposched, run from / (no source tree), checks the example cluster, places the
#     example jobs and runs the demo from its data directory; the man page and completions are
#     there and the bash completion completes;
#  3. `systemd-analyze verify` accepts both units, and the daemon's ExecStart, run as the
#     toposched user the way the unit runs it, creates its token (0600) once, keeps it across
#     a restart and answers a client;
#  4. `dpkg --purge` leaves nothing behind but the toposched user and group (policy keeps them);
#  5. the container image builds from Debian packages (scripts/build-image.sh) and runs
#     `toposched --help` and one placement inside (`buildah run --isolation chroot`) as uid
#     10001; its size is printed;
#  6. deploy/kubernetes renders (`kubectl kustomize`, or a structural check without kubectl)
#     and its Deployment runs the image the script builds.
# Needs root. DEB=path skips step 1's build and uses that package; SKIP_IMAGE=1 skips 5.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
START=$SECONDS
WORK=$(mktemp -d /tmp/toposched-test-package.XXXXXX)
LOG="$WORK/log"
SERVE_PID=""
cleanup() {
  if [ -n "$SERVE_PID" ]; then kill "$SERVE_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

step() {
  local what=$1
  shift
  local t0=$SECONDS
  if ! "$@" >"$LOG" 2>&1; then
    echo "test-package: FAILED: $what; its log:" >&2
    cat "$LOG" >&2
    exit 1
  fi
  echo "test-package: $what ($((SECONDS - t0)) s)"
}
fail() {
  echo "test-package: FAILED: $*" >&2
  exit 1
}

if [ "$(id -u)" -ne 0 ]; then
  echo "test-package: skipped (needs root: it installs and purges the package)"
  exit 0
fi
if dpkg-query -W -f='${Status}' toposched 2>/dev/null | grep -q "install ok installed"; then
  fail "a toposched package is already installed here; purge it first"
fi

# ---- 1. the package, from a clean clone ---------------------------------------------------
build_from_clone() {
  git clone --quiet --no-hardlinks "$ROOT" "$WORK/clone"
  OUT_DIR="$WORK/dist" bash "$WORK/clone/scripts/package-deb.sh"
}
if [ -z "${DEB:-}" ]; then
  step "package built from a clean clone of HEAD" build_from_clone
  DEB=$(tail -1 "$LOG")
fi
[ -f "$DEB" ] || fail "no package at $DEB"
cp "$DEB" "$WORK/"
DEB="$WORK/$(basename "$DEB")"
VERSION=$(dpkg-deb -f "$DEB" Version)
echo "test-package: $(basename "$DEB"): Depends: $(dpkg-deb -f "$DEB" Depends)"

lint() {
  lintian --fail-on error,warning --display-info "$DEB" | tee "$WORK/lintian"
}
step "lintian (no error or warning)" lint
if [ -s "$WORK/lintian" ]; then sed 's/^/  lintian: /' "$WORK/lintian"; fi

# ---- 2. installed, and run from outside any source tree ------------------------------------
install_deb() {
  # dpkg has no lock timeout; another apt run on a shared machine is waited for.
  local _
  for _ in $(seq 1 60); do
    if dpkg -i "$DEB"; then return 0; fi
    if ! fuser /var/lib/dpkg/lock-frontend /var/lib/dpkg/lock >/dev/null 2>&1; then break; fi
    sleep 5
  done
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -f -y -qq
  dpkg-query -W -f='${Status}' toposched | grep -q "install ok installed"
}
step "dpkg -i (+ apt-get install -f)" install_deb

run_installed() (
  cd /
  [ "$(command -v toposched)" = /usr/bin/toposched ]
  /usr/bin/toposched --version
  /usr/bin/toposched cluster check /usr/share/toposched/clusters/h100-2rack.yaml
  /usr/bin/toposched place --cluster /usr/share/toposched/clusters/h100-2rack.yaml \
    --jobs /usr/share/toposched/jobs/example-jobs.yaml | tee "$WORK/place"
  grep -q RUNNING "$WORK/place"
  # The demo's defaults come from the data directory, not the working directory.
  /usr/bin/toposched demo | grep -q "NVLink islands"
  test -s /usr/share/man/man1/toposched.1.gz
  zcat /usr/share/man/man1/toposched.1.gz | grep -q '^\.SS "toposched serve'
  test -s /usr/share/zsh/vendor-completions/_toposched
  bash -c 'source /usr/share/bash-completion/completions/toposched
    COMP_WORDS=(toposched topo im); COMP_CWORD=2; _toposched; [ "${COMPREPLY[*]}" = import ]
    COMP_WORDS=(toposched topo import --format n); COMP_CWORD=4; _toposched
    [ "${COMPREPLY[*]}" = "nvidia-smi nccl-xml" ]'
)
step "installed /usr/bin/toposched: cluster check, place, demo, man page, completion" \
  run_installed

# ---- 3. the units -------------------------------------------------------------------------
step "systemd-analyze verify (both units)" systemd-analyze verify \
  /lib/systemd/system/toposched.service /lib/systemd/system/toposched-slurm-watch.service

# The unit's ExecStart, continuation lines joined, $VARS from its EnvironmentFile.
exec_start() {
  sed -e ':a' -e '/\\$/N; s/\\\n//; ta' /lib/systemd/system/toposched.service |
    sed -n 's/^ExecStart=//p'
}
# Run it as systemd would: user toposched, UMask=0077, StateDirectory=toposched (0750).
start_daemon() {
  install -d -o toposched -g toposched -m 0750 /var/lib/toposched
  rm -f /var/lib/toposched/port
  local cmd
  # shellcheck disable=SC1091
  cmd=$(
    # EnvironmentFile syntax: KEY=value, the value unquoted and taken whole.
    while IFS= read -r line; do
      case $line in '' | '#'*) continue ;; esac
      export "${line%%=*}=${line#*=}"
    done </etc/toposched/toposched.env
    eval "echo $(exec_start)"
  )
  # shellcheck disable=SC2086
  (umask 0077 && exec setpriv --reuid toposched --regid toposched --init-groups $cmd) \
    2>>"$WORK/serve.log" &
  SERVE_PID=$!
  for _ in $(seq 1 100); do
    [ -s /var/lib/toposched/port ] && return 0
    kill -0 "$SERVE_PID" 2>/dev/null || { cat "$WORK/serve.log"; return 1; }
    sleep 0.1
  done
  return 1
}
stop_daemon() {
  kill "$SERVE_PID"
  wait "$SERVE_PID" || true
  SERVE_PID=""
}
service() {
  cp /usr/share/toposched/clusters/h100-2rack.yaml /etc/toposched/cluster.yaml
  sed -i 's|../samples/|/usr/share/toposched/samples/|' /etc/toposched/cluster.yaml
  sed -i 's|^TOPOSCHED_SERVE_ARGS=.*|TOPOSCHED_SERVE_ARGS=--listen 127.0.0.1:0 --port-file /var/lib/toposched/port|' \
    /etc/toposched/toposched.env
  start_daemon
  [ "$(stat -c '%a %U' /var/lib/toposched/token)" = "600 toposched" ]
  local token
  token=$(cat /var/lib/toposched/token)
  export TOPOSCHED_TOKEN_FILE=/var/lib/toposched/token
  toposched nodes --server "http://127.0.0.1:$(cat /var/lib/toposched/port)" >"$WORK/nodes"
  grep -q gpu032 "$WORK/nodes"
  stop_daemon
  start_daemon
  [ "$(cat /var/lib/toposched/token)" = "$token" ]
  toposched queue --server "http://127.0.0.1:$(cat /var/lib/toposched/port)"
  stop_daemon
  [ "$(stat -c '%U' /var/lib/toposched/toposched.db)" = toposched ]
  rm /etc/toposched/cluster.yaml
}
step "the unit's ExecStart as user toposched: token 0600 created once, kept, client served" \
  service

# ---- 4. purge -----------------------------------------------------------------------------
purge() {
  dpkg --purge toposched
  local left
  # Not the package's: build-image.sh's download cache, and man-db's cache of formatted pages
  # (systemd-analyze verify formats the man page its Documentation= names; man-db expires it).
  left=$(find /etc /usr /lib /var/lib /var/log /var/cache -xdev -name '*toposched*' \
    ! -path /var/cache/toposched-debootstrap ! -path '/var/cache/man/*' 2>/dev/null || true)
  if [ -n "$left" ]; then
    echo "left behind after purge:"
    echo "$left"
    return 1
  fi
  getent passwd toposched
  getent group toposched
}
step "dpkg --purge: nothing left but the toposched user and group" purge

# ---- 5. the container image ---------------------------------------------------------------
IMAGE="toposched:$VERSION"
if [ -z "${SKIP_IMAGE:-}" ]; then
  bah() { buildah --storage-driver vfs "$@"; }
  step "image built from Debian packages (scripts/build-image.sh)" \
    env IMAGE="$IMAGE" bash scripts/build-image.sh "$DEB"
  in_image() {
    local ctr rc=0
    ctr=$(bah from --pull-never "$IMAGE")
    {
      [ "$(bah inspect --format '{{.OCIv1.Config.User}}' "$ctr")" = 10001:10001 ]
      bah run --isolation chroot "$ctr" -- toposched --help | grep -q "topology-aware"
      [ "$(bah run --isolation chroot "$ctr" -- id -u)" = 10001 ]
      bah run --isolation chroot "$ctr" -- toposched place \
        --cluster /usr/share/toposched/clusters/h100-2rack.yaml \
        --jobs /usr/share/toposched/jobs/example-jobs.yaml | tee "$WORK/place-image"
      grep -q RUNNING "$WORK/place-image"
    } || rc=1
    bah rm "$ctr" >/dev/null
    return $rc
  }
  step "in the image (buildah run --isolation chroot): --help, uid 10001, one placement" in_image
  SIZE=$(bah images --format '{{.Size}}' "localhost/$IMAGE")
  echo "test-package: image localhost/$IMAGE: $SIZE"
  step "remove the image" bah rmi "localhost/$IMAGE"
fi

# ---- 6. deploy/kubernetes -----------------------------------------------------------------
kustomize() {
  if command -v kubectl >/dev/null 2>&1; then
    kubectl kustomize deploy/kubernetes >"$WORK/rendered.yaml"
  else
    # No kubectl: the kustomization's resources, concatenated, parsed by the check below.
    python3 - deploy/kubernetes >"$WORK/rendered.yaml" <<'EOF'
import pathlib, sys, yaml
d = pathlib.Path(sys.argv[1])
k = yaml.safe_load((d / "kustomization.yaml").read_text())
assert k["kind"] == "Kustomization", k
print("\n---\n".join((d / r).read_text() for r in k["resources"]))
EOF
  fi
  python3 - "$WORK/rendered.yaml" "$IMAGE" <<'EOF'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
dep = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "toposched"]
assert len(dep) == 1, "one Deployment toposched"
spec = dep[0]["spec"]["template"]["spec"]
c = [c for c in spec["containers"] if c["name"] == "toposched"][0]
assert c["image"] == sys.argv[2], f'image {c["image"]} != {sys.argv[2]}'
assert c["securityContext"]["runAsUser"] == 10001 and c["securityContext"]["runAsNonRoot"]
print(len(docs), "objects; the toposched container runs", c["image"])
EOF
}
step "deploy/kubernetes renders; its Deployment runs $IMAGE" kustomize
if ! command -v kubectl >/dev/null 2>&1; then
  echo "test-package: (no kubectl: the manifests were checked as plain YAML, not rendered)"
fi
echo "test-package: done in $((SECONDS - START)) s"
