# shellcheck shell=bash
# What `make test-e2e` leaves up between runs, and how a run knows it may use it: the
# LocalStack it started (by the marker every process of that LocalStack inherits), its
# fault proxy (the functions' AWS endpoint), and the stacks deployed on it, kept only
# while nothing they were built from is newer than the record of them.
# Sourced by scripts/test after env.sh.
source "$STANDIN_ROOT/localstack/common.sh"

E2E_KEPT="$STANDIN_CACHE/test-e2e-kept"
# What the deployed stacks and their agents are built from.
E2E_SOURCES=(functions remote wire statemachine template.yaml localstack bench/floor.yaml
  tests/agents.json tests/registry-agents.json scripts/test-stack.sh Cargo.lock)

# The fault proxy the record names, while it still runs (the pid is ours only while its
# command line is the proxy's).
e2e_proxy_pid() {
  local pid
  [ -f "$E2E_KEPT" ] || return 1
  read -r pid _ <"$E2E_KEPT" || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "localstack/fault_proxy.py --port 4599" || return 1
  echo "$pid"
}

e2e_reusable() {
  local run changed
  [ -f "$E2E_KEPT" ] && e2e_proxy_pid >/dev/null && ls_healthy || return 1
  read -r _ run <"$E2E_KEPT"
  [ "$run" = "$(cat "$LS_MARKER_FILE" 2>/dev/null)" ] || return 1
  changed=$(cd "$STANDIN_ROOT" && find "${E2E_SOURCES[@]}" -type f -newer "$E2E_KEPT" \
    ! -path "*/__pycache__/*" -print -quit)
  if [ -n "$changed" ]; then
    echo "$changed changed since the stacks were deployed: deploying again" >&2
    return 1
  fi
}

# Records what this run started and deployed, to be used by the next.
e2e_keep() {
  echo "$1 $(cat "$LS_MARKER_FILE")" >"$E2E_KEPT"
}

e2e_kept() { [ -f "$E2E_KEPT" ]; }

# Stops what a run of `make test-e2e` left up (and nothing else).
e2e_down() {
  local pid
  [ -f "$E2E_KEPT" ] || return 0
  if pid=$(e2e_proxy_pid); then
    kill "$pid" 2>/dev/null || true
  fi
  rm -f "$E2E_KEPT"
  bash "$STANDIN_ROOT/localstack/down"
}
