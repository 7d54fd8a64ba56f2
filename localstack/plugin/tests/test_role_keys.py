"""Tests of the AssumeRole hook: the keys STS gives out reach the tests' SigV4 agent."""

import os
import tempfile
import unittest
from pathlib import Path
from types import SimpleNamespace

from standin_localstack import role_keys
from standin_localstack.executor import ROLE_KEYS_DIR


class RoleKeysTest(unittest.TestCase):
    def test_each_assumed_key_is_written_with_its_role_and_token(self):
        from localstack.services.sts.provider import StsProvider

        with tempfile.TemporaryDirectory() as folder:
            os.environ[ROLE_KEYS_DIR] = folder
            original = StsProvider.assume_role
            try:
                role_keys.share_assumed_role_keys()
                role_keys.share_assumed_role_keys()  # a second start wraps nothing twice
                self.assertIs(StsProvider.assume_role.__wrapped_original__, original)
                context = SimpleNamespace(
                    account_id="000000000000",
                    partition="aws",
                    request=SimpleNamespace(headers={}),
                )
                role = "arn:aws:iam::000000000000:role/standin-agent-x"
                answer = StsProvider().assume_role(context, role, "standin-test", external_id="e-1")
                keys = answer["Credentials"]
                assumed = Path(folder) / "assumed"
                key_id = keys["AccessKeyId"]
                self.assertEqual((assumed / key_id).read_text(), keys["SecretAccessKey"])
                self.assertEqual((assumed / f"{key_id}.role").read_text(), role)
                self.assertEqual((assumed / f"{key_id}.token").read_text(), keys["SessionToken"])
            finally:
                StsProvider.assume_role = original
                del os.environ[ROLE_KEYS_DIR]

    def test_nothing_is_hooked_unless_the_tests_ask(self):
        from localstack.services.sts.provider import StsProvider

        os.environ.pop(ROLE_KEYS_DIR, None)
        original = StsProvider.assume_role
        role_keys.share_assumed_role_keys()
        self.assertIs(StsProvider.assume_role, original)


if __name__ == "__main__":
    unittest.main()
