"""Shares the keys LocalStack's STS gives out at AssumeRole with the tests' SigV4 agent.

On AWS, AgentCore Runtime checks a SigV4 signature through IAM, which knows every key it
issued. The tests' agent (tests/sdk_agent/server.py --auth sigv4) stands in for it: to
check a signature it needs the secret key behind the access key id, and the role it was
issued for. When STANDIN_TEST_ROLE_KEYS_DIR is set (scripts/test only), each AssumeRole
writes `assumed/<key id>` (the secret key), `<key id>.role` (the role ARN asked for) and
`<key id>.token` (the session token) there. Off everywhere else."""

import os
from pathlib import Path

from localstack.runtime import hooks

from standin_localstack.executor import ROLE_KEYS_DIR


def record(folder: str, role_arn: str, credentials: dict) -> None:
    path = Path(folder) / "assumed"
    path.mkdir(parents=True, exist_ok=True)
    key_id = credentials["AccessKeyId"]
    (path / f"{key_id}.role").write_text(role_arn)
    (path / f"{key_id}.token").write_text(credentials["SessionToken"])
    # The secret last: the agent takes a key once its secret is there.
    (path / key_id).write_text(credentials["SecretAccessKey"])


@hooks.on_infra_start()
def share_assumed_role_keys():
    folder = os.environ.get(ROLE_KEYS_DIR)
    if not folder:
        return
    from localstack.services.sts.provider import StsProvider

    original = StsProvider.assume_role
    if getattr(original, "standin_shared", False):
        return

    def assume_role(self, context, role_arn, role_session_name, *args, **kwargs):
        response = original(self, context, role_arn, role_session_name, *args, **kwargs)
        record(folder, role_arn, response["Credentials"])
        return response

    assume_role.standin_shared = True
    assume_role.__wrapped_original__ = original
    StsProvider.assume_role = assume_role
