"""SAM templates transformed at once, as `make test` deploys its five stacks."""

import copy
import os
import pathlib
import tempfile
import threading
import unittest
from unittest import mock

from localstack.services.cloudformation.engine.transformers import (
    apply_serverless_transformation,
)

UP = pathlib.Path(__file__).resolve().parents[2] / "up"
TEMPLATE = {
    "Transform": "AWS::Serverless-2016-10-31",
    "Resources": {
        "Fn": {
            "Type": "AWS::Serverless::Function",
            "Properties": {"Runtime": "provided.al2023", "Handler": "bootstrap", "CodeUri": "s3://b/k"},
        }
    },
}


def transform_at_once(threads=6, each=10):
    """Transforms in threads at once; what they raised."""
    errors = []

    def transform():
        for _ in range(each):
            try:
                apply_serverless_transformation("000000000000", "us-east-1", copy.deepcopy(TEMPLATE), {})
            except Exception as e:  # noqa: BLE001 - every failure is the finding
                errors.append(str(e))

    workers = [threading.Thread(target=transform) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return errors


class RegionTest(unittest.TestCase):
    def test_up_gives_localstack_a_region_in_a_config_file(self):
        # LocalStack sets AWS_DEFAULT_REGION around each SAM transform and removes it
        # after: a transform running beside one that ended lost it ("AWS Region cannot be
        # found", a deploy of `make test` failed so). A config file's region stays.
        self.assertIn('export AWS_CONFIG_FILE="$LS_RUN/aws-config"', UP.read_text())

    def test_transforms_at_once_keep_the_config_file_s_region(self):
        with tempfile.TemporaryDirectory() as tmp:
            config = pathlib.Path(tmp) / "aws-config"
            config.write_text("[default]\nregion = us-east-1\n")
            env = {k: v for k, v in os.environ.items() if k not in ("AWS_DEFAULT_REGION", "AWS_REGION")}
            env["AWS_CONFIG_FILE"] = str(config)
            with mock.patch.dict(os.environ, env, clear=True):
                self.assertEqual(transform_at_once(), [])


if __name__ == "__main__":
    unittest.main()
