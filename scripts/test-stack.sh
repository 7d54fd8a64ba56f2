# shellcheck shell=bash
# The test stack and the fault tools around it, shared by scripts/test and scripts/soak.
# Sourced after env.sh; the caller stops what it started (FAULT_PROXY_PID).

# Faults are injected where they happen in production: a proxy between the functions and
# the AWS endpoints (LocalStack's executor points the functions at it), and rules for the
# local Lambda service's delivery of invocations (late, twice, never). Observers talk to
# LocalStack directly.
export STANDIN_FAULT_PROXY="http://127.0.0.1:4599" STANDIN_AWS_PROXY="http://127.0.0.1:4599"
export STANDIN_INVOKE_FAULTS="$STANDIN_CACHE/test-invoke-faults"
FAULT_PROXY_PID=""

start_fault_proxy() {
  local log=$1
  rm -rf "$STANDIN_INVOKE_FAULTS" && mkdir -p "$STANDIN_INVOKE_FAULTS"
  "$STANDIN_CACHE/venv-localstack/bin/python" "$STANDIN_ROOT/localstack/fault_proxy.py" \
    --port 4599 --upstream http://127.0.0.1:4566 >"$log" 2>&1 &
  FAULT_PROXY_PID=$!
  for _ in $(seq 1 50); do
    curl -fsS --max-time 1 "$STANDIN_FAULT_PROXY/__faults/stats" >/dev/null 2>&1 && return 0
    kill -0 "$FAULT_PROXY_PID" 2>/dev/null || break
    sleep 0.1
  done
  cat "$log" >&2
  echo "the fault proxy did not start on 127.0.0.1:4599 (is the port taken?)" >&2
  return 1
}

# The stand-in as the tests run it: the test agents' personas (tests/agents.json, and
# tests/registry-agents.json put through the agent registry), a
# small history bound so that a long follow rolls over, a short turn window so that the
# SDK agent's work (15 s) is heard by the watch, not by the turn, and an idle re-check
# of at most 90 s (the backstop starts at 30 s), so that a lost push or a park that never
# ran is recovered within a test and the backstop's growth shows;
# the test CA trusted for agents (the mTLS agent's server certificate); 25 MiB of
# artifacts per stand-in, so a 20 MB file is kept whole and the next one truncated;
# notes also go to the default event bus, where a test routes them with a rule; every AWS
# call is logged with its IAM action, for the test that checks the policies; the SigV4
# test agent (tests/peers) stands where AgentCore Runtime's data plane would be.
# Further NAME=VALUE arguments replace the parameters above (the soak's --stack-params).
# With TEST_STACK_BUILT set, the stack is deployed from that build of template.yaml
# (localstack/build), so that several stacks share one build and deploy at once.
deploy_test_stack() {
  local name=$1 agents kv
  shift
  # Whatever make test-e2e kept is no longer what it deployed.
  rm -f "$STANDIN_CACHE/test-e2e-kept"
  agents=$(python3 -c 'import json; print(json.dumps(json.dumps(json.load(open("tests/agents.json")), separators=(",", ":"))))')
  local -A params=(
    [Endpoint]=localstack [HistoryBound]=8 [TurnWindowSecs]=10 [IdleRecheckSecs]=90
    [FollowWindowSecs]=20 [NoteBusName]=default [RecordAwsCalls]=true
    [PushRateLimit]=75 [PushBurstLimit]=150 [MaxArtifactBytes]=26214400
    [AgentCaFile]="$STANDIN_ROOT/remote/tests/data/tls/ca.pem"
    [AgentCoreEndpoint]=http://127.0.0.1:27166 [Agents]="$agents"
  )
  for kv in "$@"; do
    [[ "$kv" == *=* ]] || { echo "deploy_test_stack: $kv is not NAME=VALUE" >&2; return 1; }
    params[${kv%%=*}]=${kv#*=}
  done
  local overrides=()
  for kv in "${!params[@]}"; do overrides+=("$kv=${params[$kv]}"); done
  local built=()
  [ -z "${TEST_STACK_BUILT:-}" ] || built=(--built "$TEST_STACK_BUILT")
  bash "$STANDIN_ROOT/localstack/deploy" template.yaml "$name" "${built[@]}" \
    --parameter-overrides "${overrides[@]}" >/dev/null
  # The rest of the test agents (the soak's personas) go through the registry, as an
  # operator adds agents without a redeploy: the CLI puts each through the control API.
  [ -n "${STANDIN_CLI_BUILT:-}" ] || cargo build --locked -q -p standin-cli
  local put_log="$STANDIN_CACHE/registry-put-$name.log"
  "$CARGO_TARGET_DIR/debug/standin" --stack "$name" agents put tests/registry-agents.json \
    >"$put_log" 2>&1 || { cat "$put_log" >&2; return 1; }
}
