# Sourced by the install, package and image scripts: one line per step, the step's full log on
# failure. The caller sets STEP_NAME (the prefix of each line) and LOG (the file a step's output
# goes to).
#   step "what" cmd...
step() {
  local what=$1
  shift
  echo "$STEP_NAME: $what"
  if ! "$@" >"$LOG" 2>&1; then
    echo "$STEP_NAME: FAILED: $what; its log:" >&2
    cat "$LOG" >&2
    exit 1
  fi
}
