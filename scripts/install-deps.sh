#!/usr/bin/env bash
# Installs every package toposched needs to build and test, with apt-get. Idempotent: when all
# packages are already installed it returns at once without touching the network.
set -euo pipefail

PACKAGES=(
  build-essential g++ cmake ninja-build pkg-config git
  nlohmann-json3-dev libyaml-cpp-dev libcpp-httplib-dev libcli11-dev libfmt-dev libspdlog-dev
  libsqlite3-dev sqlite3 libhwloc-dev libhwloc-plugins hwloc libtinyxml2-dev
  googletest libgtest-dev libgmock-dev libbenchmark-dev libglpk-dev
  python3 clang-format
  prometheus
  slurmctld slurmd slurm-client munge
)

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

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
