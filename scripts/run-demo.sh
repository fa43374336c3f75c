#!/usr/bin/env bash
# The main job: import the example cluster and a real node topology, print their summaries, run
# one placement pass of the example jobs; then the daemon on its embedded default — a real
# SQLite file, the example cluster — with the example jobs submitted through its REST API by the
# command-line client, the queue and an explanation printed, the daemon killed and restarted on
# the same database, and the queue printed again from what the store kept; then a job's exit
# report with a real NCCL socket-fallback log, classified by the daemon, and its diagnosis on
# the demo cluster's topology; last, the dashboard's URL.
set -euo pipefail
cd "$(dirname "$0")/.."
# --keep-running: leave the restarted daemon running at the end, for a person to open the
# dashboard it serves (its URL is printed); stop it with the printed kill command.
KEEP_RUNNING=0
for arg in "$@"; do
  case "$arg" in
    --keep-running) KEEP_RUNNING=1 ;;
    *) echo "run-demo: unknown argument $arg (usage: run-demo.sh [--keep-running])" >&2; exit 2 ;;
  esac
done
BIN=build/toposched
CLUSTER=data/clusters/h100-2rack.yaml
JOBS=data/jobs/example-jobs.yaml
$BIN demo --cluster "$CLUSTER" \
  --topo data/samples/nvidia-smi/24-h100-sxm-8gpu-nv18-8nic-pix-sglang30401.txt
echo
echo "== one placement pass: $JOBS on $CLUSTER"
$BIN place --cluster "$CLUSTER" --jobs "$JOBS"

RUN_DIR=$(mktemp -d /tmp/toposched-demo.XXXXXX)
DB="$RUN_DIR/toposched.db"
SERVE_PID=""
stop_daemon() {
  if [ -n "$SERVE_PID" ] && kill -0 "$SERVE_PID" 2>/dev/null; then
    kill "$SERVE_PID" 2>/dev/null || true
    wait "$SERVE_PID" 2>/dev/null || true
  fi
  SERVE_PID=""
}
trap stop_daemon EXIT

start_daemon() {
  rm -f "$RUN_DIR/port"
  $BIN serve --cluster "$CLUSTER" --db "$DB" --listen 127.0.0.1:0 --port-file "$RUN_DIR/port" \
    --pass-interval-ms 200 --quiet >>"$RUN_DIR/serve.log" 2>&1 &
  SERVE_PID=$!
  for _ in $(seq 1 100); do
    [ -s "$RUN_DIR/port" ] && break
    if ! kill -0 "$SERVE_PID" 2>/dev/null; then
      echo "run-demo: the daemon exited; its log:" >&2
      cat "$RUN_DIR/serve.log" >&2
      exit 1
    fi
    sleep 0.1
  done
  [ -s "$RUN_DIR/port" ] || { echo "run-demo: the daemon did not start" >&2; exit 1; }
  export TOPOSCHED_SERVER="http://127.0.0.1:$(cat "$RUN_DIR/port")"
  export TOPOSCHED_TOKEN_FILE="$DB.token"
}

echo
echo "== the daemon: $BIN serve --cluster $CLUSTER --db $DB"
start_daemon
echo "listening on $TOPOSCHED_SERVER"

# The whole jobs file in one submit: every entry validated first, one id per line in file order.
ids=$($BIN submit "$JOBS")
mapfile -t id_list <<<"$ids"
mapfile -t name_list < <(sed -n 's/^  - name: //p' "$JOBS")
first_id=${id_list[0]}
last_id=${id_list[${#id_list[@]}-1]}
for i in "${!id_list[@]}"; do
  echo "submitted ${name_list[$i]} as ${id_list[$i]}"
done
sleep 0.6  # a few scheduling passes
echo
echo "== toposched queue"
$BIN queue
echo
for id in "$first_id" "$last_id"; do
  echo "== toposched explain $id"
  $BIN explain "$id"
done

echo
echo "== kill -9 the daemon, start it again on $DB"
{
  kill -9 "$SERVE_PID"
  wait "$SERVE_PID" || true
} 2>/dev/null
SERVE_PID=""
start_daemon
echo "== toposched queue (after the restart, from the SQLite store)"
$BIN queue
echo
echo "== the dashboard: $TOPOSCHED_SERVER/ (cluster, nodes, queue, jobs; docs/dashboard.md;"
echo "   scripts/run-demo.sh --keep-running leaves the daemon running for it)"
# A job that ends with an exit report: its log is a real NCCL log where libibverbs could not be
# opened and NCCL fell back to TCP sockets (data/interruption-logs, PROVENANCE in the file).
FALLBACK_LOG=data/interruption-logs/1-socket-fallback-libibverbs-missing-detectron2-4730.log
NODE=$($BIN show "$first_id" --json |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["placement"]["nodes"][0]["node"])')
echo
echo "== toposched complete $first_id --exit-code 1 --log $FALLBACK_LOG --node $NODE (an exit report)"
$BIN complete "$first_id" --exit-code 1 --log "$FALLBACK_LOG" --node "$NODE"
echo "== toposched events --job $first_id (the daemon classified the report: its cause)"
$BIN events --job "$first_id" | tail -1
echo
echo "== toposched diagnose $first_id --server \$TOPOSCHED_SERVER --node $NODE --log $FALLBACK_LOG"
$BIN diagnose "$first_id" --server "$TOPOSCHED_SERVER" --node "$NODE" --log "$FALLBACK_LOG"
if [ "$KEEP_RUNNING" = 1 ]; then
  trap - EXIT
  echo
  echo "the daemon keeps running (pid $SERVE_PID): open $TOPOSCHED_SERVER/ in a browser;"
  echo "changes from the page need the token in $DB.token; stop it with: kill $SERVE_PID"
  echo "demo files: $RUN_DIR"
  exit 0
fi
stop_daemon
echo
echo "demo files: $RUN_DIR"
