# shellcheck shell=bash
# What `make test-e2e` leaves up between runs, and how a run knows it may use it: the
# LocalStack it started (by the marker every process of that LocalStack inherits), its
# fault proxy (the functions' AWS endpoint), and the stacks deployed on it, kept only
# while nothing they were built from is newer than the record of them.
# Sourced by scripts/test after env.sh.
source "$STANDIN_ROOT/localstack/common.sh"

# The record: the proxy's pid and its start time (a pid alone may be another process's
# by now), the LocalStack run's marker, and the test stacks deployed. Its time is when
# the deploy began.
E2E_KEPT="$STANDIN_CACHE/test-e2e-kept"
E2E_STAMP="$STANDIN_CACHE/test-e2e-deploying"
# The test stacks scripts/test deploys (one per lane of suites).
E2E_STACKS="standin,standin-b,standin-c"
# What the deployed stacks and their agents are built from.
E2E_SOURCES=(functions remote wire mcp api statemachine template.yaml localstack
  bench/floor.yaml tests/agents.json tests/registry-agents.json scripts/test-stack.sh
  Cargo.toml Cargo.lock)

proc_started() { awk '{print $22}' 2>/dev/null <"/proc/$1/stat"; }

# The fault proxy the record names, while it still runs.
e2e_proxy_pid() {
  local pid started
  [ -f "$E2E_KEPT" ] || return 1
  read -r pid started _ <"$E2E_KEPT" || return 1
  [ -n "$pid" ] && [ "$(proc_started "$pid")" = "$started" ] || return 1
  echo "$pid"
}

# The LocalStack running now is the one the record names.
e2e_localstack_ours() {
  local run
  [ -f "$E2E_KEPT" ] || return 1
  read -r _ _ run _ <"$E2E_KEPT"
  [ -n "$run" ] && [ "$run" = "$(cat 2>/dev/null "$LS_MARKER_FILE")" ]
}

e2e_reusable() {
  local changed stacks
  e2e_proxy_pid >/dev/null && e2e_localstack_ours && ls_healthy || return 1
  read -r _ _ _ stacks <"$E2E_KEPT"
  [ "$stacks" = "$E2E_STACKS" ] || return 1
  changed=$(cd "$STANDIN_ROOT" && find "${E2E_SOURCES[@]}" -type f -newer "$E2E_KEPT" \
    ! -path "*/__pycache__/*" -print -quit)
  if [ -n "$changed" ]; then
    echo "$changed changed since the stacks were deployed: deploying again" >&2
    return 1
  fi
}

# Before a deploy: the record will carry this time, so an edit made while it builds
# counts as a change.
e2e_deploying() { touch "$E2E_STAMP"; }

# Records what this run started and deployed, to be used by the next.
e2e_keep() {
  echo "$1 $(proc_started "$1") $(cat "$LS_MARKER_FILE") $E2E_STACKS" >"$E2E_KEPT"
  touch -r "$E2E_STAMP" "$E2E_KEPT"
}

e2e_kept() { [ -f "$E2E_KEPT" ]; }

# Stops what a run of `make test-e2e` left up (and nothing else).
e2e_down() {
  local pid
  [ -f "$E2E_KEPT" ] || return 0
  if pid=$(e2e_proxy_pid); then
    kill "$pid" 2>/dev/null || true
  fi
  if e2e_localstack_ours; then
    bash "$STANDIN_ROOT/localstack/down"
  fi
  rm -f "$E2E_KEPT"
}
