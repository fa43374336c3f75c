#!/usr/bin/env bash
# The main job for now: import the example cluster and a real node topology, print their
# summaries, then run one placement pass of the example jobs on the example cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=build/toposched
$BIN demo --cluster data/clusters/h100-2rack.yaml \
  --topo data/samples/nvidia-smi/24-h100-sxm-8gpu-nv18-8nic-pix-sglang30401.txt
echo
echo "== one placement pass: data/jobs/example-jobs.yaml on data/clusters/h100-2rack.yaml"
$BIN place --cluster data/clusters/h100-2rack.yaml --jobs data/jobs/example-jobs.yaml
