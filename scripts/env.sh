# shellcheck shell=bash
# Shared settings for the project's scripts. Sourced, not run.
# Everything downloaded or built is cached outside the clone, so a second run (or a
# second clone) reuses it and a fresh machine still works.
STANDIN_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export STANDIN_ROOT
export STANDIN_CACHE="${STANDIN_CACHE:-$HOME/.cache/standin}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$STANDIN_CACHE/target}"
mkdir -p "$STANDIN_CACHE"
# CI builds each commit once: incremental state would only grow the cache.
if [ "${CI:-}" = "true" ]; then export CARGO_INCREMENTAL=0; fi

# Keeps the newest test and benchmark binary of each name in the shared target directory:
# a build of changed code links new ones beside the old, tens of GB over a day of runs.
prune_old_binaries() {
  local dir="$CARGO_TARGET_DIR/debug/deps" file
  [ -d "$dir" ] || return 0
  find "$dir" -maxdepth 1 -type f -perm -u+x -regextype posix-extended \
      -regex '.*/[^./]+-[0-9a-f]{16}' -printf '%T@ %f\n' \
    | sort -rn \
    | awk '{ name = $2; sub(/-[0-9a-f]+$/, "", name); if (seen[name]++) print $2 }' \
    | while read -r file; do rm -f "$dir/$file"; done
  # Incremental caches untouched for a day too: every checkout path (each fresh clone's)
  # starts a set of its own, gigabytes a run, and a live one is touched by each build.
  dir="$CARGO_TARGET_DIR/debug/incremental"
  [ -d "$dir" ] || return 0
  find "$dir" -mindepth 1 -maxdepth 1 -type d -mmin +1440 -exec rm -rf {} + 2>/dev/null || true
}

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }

# Runs "$@" in the background in a session of its own (stopped whole: $! leads it) at the
# lowest priority, as a scheduling group too: the kernel shares the cores between
# sessions' groups (autogroup) whatever a process's nice, so LocalStack's session, its
# functions among it, keeps its share, and the tests' theirs.
at_lowest_priority() {
  # -w: were setsid to fork (a caller leading its process group), $! still ends with it.
  setsid -w bash -c 'echo 19 >/proc/self/autogroup 2>/dev/null || true; exec nice -n 19 "$@"' \
    at_lowest_priority "$@" &
}
