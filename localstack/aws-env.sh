# shellcheck shell=bash
# AWS settings that point every SDK, the AWS CLI and SAM at the local stack. Sourced.
export AWS_ENDPOINT_URL="${AWS_ENDPOINT_URL:-http://127.0.0.1:4566}"
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-test}"
export AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-test}"
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"
export AWS_REGION="$AWS_DEFAULT_REGION"
export AWS_EC2_METADATA_DISABLED=true
export SAM_CLI_TELEMETRY=0
export PATH="$STANDIN_CACHE/venv-tools/bin:$PATH"
