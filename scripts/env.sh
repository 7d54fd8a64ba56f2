# shellcheck shell=bash
# Shared settings for the project's scripts. Sourced, not run.
# Everything downloaded or built is cached outside the clone, so a second run (or a
# second clone) reuses it and a fresh machine still works.
STANDIN_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export STANDIN_ROOT
export STANDIN_CACHE="${STANDIN_CACHE:-$HOME/.cache/standin}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$STANDIN_CACHE/target}"
mkdir -p "$STANDIN_CACHE"

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }
