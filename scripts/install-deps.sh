#!/usr/bin/env bash
# Installs every package toposched needs to build and test, with apt-get. Idempotent: when all
# packages are already installed it returns at once without touching the network.
set -euo pipefail

PACKAGES=(
  build-essential g++ cmake ninja-build pkg-config git
  nlohmann-json3-dev libyaml-cpp-dev libcpp-httplib-dev libcli11-dev libfmt-dev libspdlog-dev
  libsqlite3-dev sqlite3 libhwloc-dev libhwloc-plugins hwloc libtinyxml2-dev
  # The daemon's HTTP listeners: Boost.Beast (header-only), OpenSSL, zlib.
  libboost-dev libssl-dev zlib1g-dev
  # The kubelet device plugin (src/deviceplugin): gRPC and protobuf, the .proto compiled at build.
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  googletest libgtest-dev libgmock-dev libbenchmark-dev libglpk-dev
  python3 clang-format
  # The sanitizer and fuzzing build (scripts/test.sh, scripts/fuzz.sh): clang with its
  # sanitizer and libFuzzer runtimes (a Recommends of clang, so named here), linked with lld.
  clang libclang-rt-14-dev lld
  prometheus
  # The replicated store's tests run a real three-member etcd cluster on loopback (docs/ha.md).
  etcd-server etcd-client
  slurmctld slurmd slurm-client munge
  # Packaging (scripts/package-deb.sh, build-image.sh, test-package.sh).
  dpkg-dev lintian systemd buildah debootstrap python3-yaml psmisc
  # The dashboard's browser test (tests/dashboard): headless Chromium driven over WebDriver.
  chromium chromium-driver
)
# `kubectl kustomize` renders deploy/kubernetes: Debian's kubectl is in kubernetes-client; a
# kubectl installed otherwise is used as it is.
if ! command -v kubectl >/dev/null 2>&1; then PACKAGES+=(kubernetes-client); fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
LOG=$(mktemp /tmp/install-deps.XXXXXX)
trap 'rm -f "$LOG"' EXIT
STEP_NAME=install-deps
# shellcheck source=lib/step.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/step.sh"
step "apt-get update" $SUDO apt-get update -q
step "installing ${missing[*]}" $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
