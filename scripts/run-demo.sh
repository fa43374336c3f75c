#!/usr/bin/env bash
# The main job for now: import the example cluster and a real node topology, print the summary.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=build/toposched
$BIN demo --cluster data/clusters/h100-2rack.yaml \
  --topo data/samples/nvidia-smi/24-h100-sxm-8gpu-nv18-8nic-pix-sglang30401.txt
