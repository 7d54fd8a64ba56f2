# shellcheck shell=bash
# Where the running LocalStack keeps its state. Sourced.
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/env.sh"
LS_RUN="$STANDIN_CACHE/localstack-run"
LS_PID_FILE="$LS_RUN/pid"
# shellcheck disable=SC2034 # read by the scripts that source this file
LS_LOGFILE="$LS_RUN/localstack.log"
LS_PORT="${LOCALSTACK_PORT:-4566}"
LS_URL="http://127.0.0.1:$LS_PORT"

ls_pid() { [ -f "$LS_PID_FILE" ] && cat "$LS_PID_FILE"; }
# LocalStack runs as the leader of its own process group: the group holds it, the
# DynamoDB Local JVM and every function process, and is what `down` stops.
ls_group_alive() { local pid; pid="$(ls_pid)" && [ -n "$pid" ] && kill -0 -- "-$pid" 2>/dev/null; }
ls_healthy() { curl -fsS --max-time 2 "$LS_URL/_localstack/health" >/dev/null 2>&1; }

# Every process `up` starts inherits this marker, including the ones LocalStack puts in
# sessions of their own (the DynamoDB Local JVM): `down` finds leftovers by it.
LS_MARKER_FILE="$LS_RUN/marker"
ls_marked_pids() {
  local marker p
  marker="$(cat "$LS_MARKER_FILE" 2>/dev/null)" || return 0
  [ -n "$marker" ] || return 0
  for p in /proc/[0-9]*; do
    if tr '\0' '\n' 2>/dev/null <"$p/environ" | grep -qx "STANDIN_LS_RUN=$marker"; then
      echo "${p#/proc/}"
    fi
  done
}
