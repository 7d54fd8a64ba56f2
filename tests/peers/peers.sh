# shellcheck shell=bash
# The real A2A servers the end-to-end tests talk to besides the scripted agents, each
# installed pinned (its lock file) into $STANDIN_CACHE and started on loopback:
#   27141  a2a-sdk 0.3.26, JSON-RPC, push         (sdk03/)
#   27142  a2a-sdk 0.3.26, 0.3's HTTP+JSON, push  (sdk03/ --rest)
#   27143  Strands Agents 1.62 A2AServer          (strands/, a scripted model)
#   27144  Google ADK 2.13 to_a2a                 (adk/, a scripted model)
#   27145  @a2a-js/sdk 0.3.14, JSON-RPC, push     (js03/)
#   27148  Pydantic AI 2.68 on FastA2A 2.1 (1.0)  (pydantic/, a scripted model)
#   27149  LangGraph's API server 0.16, in memory (langgraph/, a scripted model; its
#          card at /.well-known/agent-card.json?assistant_id=…)
#   27180  Mastra 1.71's A2A routes (0.3, push advertised), Node (mastra/, a scripted model;
#          its card at /api/.well-known/widgets/agent-card.json)
#   27161-27164  a2a-sdk 1.3 behind auth: API key (its card too), bearer (an extended
#                card), basic (no push), OAuth2 JWTs   (tests/sdk_agent/server.py --auth)
#   27165  oauth2-mock-server 7.2.1, the OAuth2 server those JWTs come from (oauth2/)
#   27167  a2a-sdk 1.3 over HTTPS requiring a client certificate (mTLS), with the test
#          certificates of remote/tests/data/tls/ (the stack trusts their CA: AgentCaFile)
#   27166  a2a-sdk 1.3 that checks SigV4 signatures (bedrock-agentcore, as AgentCore
#          Runtime) made with the keys of an assumed standin-agent-* role: LocalStack's
#          AssumeRole (the plugin's hook) writes each key it gives out, with its role, to
#          $STANDIN_TEST_ROLE_KEYS_DIR/assumed (exported here, before LocalStack
#          starts), where the agent looks up the signer's; the executor writes the
#          functions' own keys to .../functions, which the agent never accepts
# Sourced after env.sh. install_peers is idempotent (a stamp per lock file); start_peers
# records the PIDs in PEER_PIDS for the caller's cleanup (stop_peers).
PEERS_DIR="$STANDIN_ROOT/tests/peers"
PEER_PIDS=""
export STANDIN_TEST_ROLE_KEYS_DIR="$STANDIN_CACHE/role-keys"

# Called before LocalStack starts, whose executor writes the keys of this run; a
# LocalStack kept from an earlier run keeps its keys (its functions' signers hold them).
clear_role_keys() {
  rm -rf "$STANDIN_TEST_ROLE_KEYS_DIR"
}

peer_venv() {
  local name=$1 lock="$PEERS_DIR/$1/requirements.lock" venv stamp
  venv="$STANDIN_CACHE/venv-peer-$name"
  stamp="$venv/.stamp-$(sha256sum "$lock" | cut -c1-12)"
  if [ ! -f "$stamp" ]; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    PIP_CACHE_DIR="$STANDIN_CACHE/pip" "$venv/bin/pip" install -q --disable-pip-version-check \
      --no-deps -r "$lock"
    touch "$stamp"
  fi
}

# Installs a Node peer from its lock file into $STANDIN_CACHE/peer-NAME (a stamp per lock).
npm_peer() {
  local name=$1 dir="$STANDIN_CACHE/peer-$1" stamp
  stamp="$dir/.stamp-$(cat "$PEERS_DIR/$name/package.json" "$PEERS_DIR/$name/package-lock.json" | sha256sum | cut -c1-12)"
  if [ ! -f "$stamp" ]; then
    rm -rf "$dir" && mkdir -p "$dir"
    cp "$PEERS_DIR/$name/package.json" "$PEERS_DIR/$name/package-lock.json" "$dir/"
    (cd "$dir" && npm_config_cache="$STANDIN_CACHE/npm" npm ci --silent --no-audit --no-fund)
    touch "$stamp"
  fi
}

install_peers() {
  local name
  for name in sdk03 strands adk pydantic langgraph; do peer_venv "$name"; done
  npm_peer js03
  cp "$PEERS_DIR/js03/server.mjs" "$STANDIN_CACHE/peer-js03/server.mjs"
  npm_peer mastra
  cp "$PEERS_DIR/mastra/server.mjs" "$STANDIN_CACHE/peer-mastra/server.mjs"
  npm_peer oauth2
  # Not a peer but a parent: the A2A JavaScript SDK's client, through the A2A front.
  npm_peer js-parent
  cp "$PEERS_DIR/js-parent/conversation.mjs" "$STANDIN_CACHE/peer-js-parent/conversation.mjs"
}

# Whether something answers at a URL: any HTTP status (a card may want credentials), or
# for tcp://host:port a connection (an mTLS agent refuses a handshake without a certificate).
answers() {
  case $1 in
    tcp://*)
      local at=${1#tcp://}
      (exec 3<>"/dev/tcp/${at%:*}/${at##*:}") 2>/dev/null
      ;;
    *) [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$1" 2>/dev/null)" != "000" ] ;;
  esac
}

# Waits until the peer started as `pid` answers at a URL (see answers).
await_http() {
  local name=$1 url=$2 pid=$3 log=$4
  for _ in $(seq 1 150); do
    answers "$url" && return 0
    if ! kill -0 "$pid" 2>/dev/null; then
      cat "$log" >&2
      echo "the $name peer did not start ($url)" >&2
      return 1
    fi
    sleep 0.2
  done
  cat "$log" >&2
  echo "the $name peer did not answer at $url within 30 s" >&2
  return 1
}

# The agents that require credentials, and the OAuth2 server. What each accepts is a
# fresh random value in $STANDIN_AUTH_DIR/<scheme> (the tests put it in Secrets Manager
# and may rotate it by writing the file); what each heard goes to <scheme>.heard.
start_auth_peers() {
  local logs=$1 sdk="$STANDIN_CACHE/venv-a2a-sdk/bin/python" server="$STANDIN_ROOT/tests/sdk_agent/server.py"
  export STANDIN_AUTH_DIR="$STANDIN_CACHE/auth-peers"
  rm -rf "$STANDIN_AUTH_DIR" && mkdir -p "$STANDIN_AUTH_DIR"
  random() { head -c 24 /dev/urandom | base64 | tr '+/' '-_'; }
  random >"$STANDIN_AUTH_DIR/api_key"
  random >"$STANDIN_AUTH_DIR/bearer"
  printf '{"username": "stand-in", "password": "%s"}' "$(random)" >"$STANDIN_AUTH_DIR/basic"
  : >"$STANDIN_AUTH_DIR/oauth2"
  node "$STANDIN_CACHE/peer-oauth2/node_modules/oauth2-mock-server/dist/oauth2-mock-server.js" \
    -a 127.0.0.1 -p 27165 >"$logs/peer-oauth2.log" 2>&1 &
  PEER_PIDS="$PEER_PIDS $!"
  await_http oauth2 http://127.0.0.1:27165/jwks $! "$logs/peer-oauth2.log"
  local scheme port extra spec
  for spec in "api_key 27161 --card-needs-auth" "bearer 27162 --extended-card" "basic 27163 --no-push" \
      "oauth2 27164 --jwks http://127.0.0.1:27165/jwks --issuer http://localhost:27165"; do
    read -r scheme port extra <<<"$spec"
    # shellcheck disable=SC2086 # extra is a list of flags
    "$sdk" "$server" --port "$port" --work-seconds 15 --auth "$scheme" \
      --accept-file "$STANDIN_AUTH_DIR/$scheme" $extra >"$logs/peer-auth-$scheme.log" 2>&1 &
    PEER_PIDS="$PEER_PIDS $!"
    await_http "auth-$scheme" "http://127.0.0.1:$port/.well-known/agent-card.json" $! "$logs/peer-auth-$scheme.log"
  done
  mkdir -p "$STANDIN_TEST_ROLE_KEYS_DIR"
  "$sdk" "$server" --port 27166 --work-seconds 15 --auth sigv4 \
    --accept-file "$STANDIN_TEST_ROLE_KEYS_DIR" --heard-file "$STANDIN_AUTH_DIR/sigv4.heard" \
    --role-prefix "arn:aws:iam::000000000000:role/standin-agent-" \
    >"$logs/peer-auth-sigv4.log" 2>&1 &
  PEER_PIDS="$PEER_PIDS $!"
  await_http auth-sigv4 http://127.0.0.1:27166/.well-known/agent-card.json $! "$logs/peer-auth-sigv4.log"
  local tls="$STANDIN_ROOT/remote/tests/data/tls"
  cp "$tls/client-identity.pem" "$STANDIN_AUTH_DIR/mtls"
  "$sdk" "$server" --port 27167 --work-seconds 15 --tls-cert "$tls/server.pem" \
    --tls-key "$tls/server.key" --client-ca "$tls/client-ca.pem" >"$logs/peer-auth-mtls.log" 2>&1 &
  PEER_PIDS="$PEER_PIDS $!"
  await_http auth-mtls tcp://127.0.0.1:27167 $! "$logs/peer-auth-mtls.log"
}

# Starts one peer: name, port, log, command...
start_peer() {
  local name=$1 port=$2 log=$3; shift 3
  "$@" >"$log" 2>&1 &
  PEER_PIDS="$PEER_PIDS $!"
  local pid=$!
  for _ in $(seq 1 150); do
    curl -fsS --max-time 1 "http://127.0.0.1:$port/.well-known/agent-card.json" >/dev/null 2>&1 && return 0
    if ! kill -0 "$pid" 2>/dev/null; then
      cat "$log" >&2
      echo "the $name peer did not start on 127.0.0.1:$port" >&2
      return 1
    fi
    sleep 0.2
  done
  cat "$log" >&2
  echo "the $name peer did not answer on 127.0.0.1:$port within 30 s" >&2
  return 1
}

start_peers() {
  local logs=$1 venv="$STANDIN_CACHE/venv-peer"
  start_peer sdk03 27141 "$logs/peer-sdk03.log" \
    "$venv-sdk03/bin/python" "$PEERS_DIR/sdk03/server.py" --port 27141 --work-seconds 15 \
    --received "$STANDIN_RECEIVED_DIR/sdk03.jsonl"
  start_peer sdk03-rest 27142 "$logs/peer-sdk03-rest.log" \
    "$venv-sdk03/bin/python" "$PEERS_DIR/sdk03/server.py" --port 27142 --rest --work-seconds 15 \
    --received "$STANDIN_RECEIVED_DIR/sdk03-rest.jsonl"
  start_peer strands 27143 "$logs/peer-strands.log" \
    "$venv-strands/bin/python" "$PEERS_DIR/strands/server.py" --port 27143
  start_peer adk 27144 "$logs/peer-adk.log" \
    "$venv-adk/bin/python" "$PEERS_DIR/adk/server.py" --port 27144
  start_peer pydantic 27148 "$logs/peer-pydantic.log" \
    "$venv-pydantic/bin/python" "$PEERS_DIR/pydantic/server.py" --port 27148
  # As `langgraph dev` runs it, from a copy of its project (it keeps its state beside
  # it): in memory, no license, no telemetry, no reload.
  local graph="$STANDIN_CACHE/peer-langgraph"
  rm -rf "$graph" && mkdir -p "$graph"
  cp "$PEERS_DIR/langgraph/graph.py" "$PEERS_DIR/langgraph/langgraph.json" "$graph/"
  (cd "$graph" && LANGGRAPH_CLI_NO_ANALYTICS=1 LANGSMITH_TRACING=false exec \
    "$venv-langgraph/bin/langgraph" dev --config langgraph.json --host 127.0.0.1 \
    --port 27149 --no-browser --no-reload) >"$logs/peer-langgraph.log" 2>&1 &
  PEER_PIDS="$PEER_PIDS $!"
  await_http langgraph http://127.0.0.1:27149/ok $! "$logs/peer-langgraph.log"
  start_peer js03 27145 "$logs/peer-js03.log" \
    node "$STANDIN_CACHE/peer-js03/server.mjs" --port 27145 --work-seconds 15
  node "$STANDIN_CACHE/peer-mastra/server.mjs" --port 27180 >"$logs/peer-mastra.log" 2>&1 &
  PEER_PIDS="$PEER_PIDS $!"
  await_http mastra http://127.0.0.1:27180/api/.well-known/widgets/agent-card.json $! \
    "$logs/peer-mastra.log"
}

stop_peers() {
  local pid
  for pid in $PEER_PIDS; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  PEER_PIDS=""
}
