"""Tests of the LocalStack speed fixes: same answers, parsed and built once."""

import time
import unittest
from types import SimpleNamespace

from standin_localstack import speedups


class SpeedupsTest(unittest.TestCase):
    def test_jsonpaths_are_parsed_once_and_evaluate_the_same(self):
        from localstack.services.stepfunctions.asl.utils import json_path

        speedups.cache_jsonpath_parsing()
        speedups.cache_jsonpath_parsing()  # a second start wraps nothing twice
        data = {"cursor": {"next": {"step": "park", "timeout_secs": 20}}}
        began = time.monotonic()
        values = [json_path.extract_json("$.cursor.next.timeout_secs", data) for _ in range(200)]
        self.assertEqual(set(values), {20})
        self.assertLess(time.monotonic() - began, 2.0, "200 evaluations of one path stay cheap")
        self.assertGreaterEqual(json_path.parse.cache_info().hits, 199)
        self.assertFalse(hasattr(json_path.parse.__wrapped__, "cache_info"), "wrapped once")

    def test_a_lambda_client_is_made_once_per_service_region_and_role(self):
        from localstack.services.stepfunctions.asl.component.state.state_execution.state_task import (
            lambda_eval_utils,
        )

        made = []

        def make(service, region, state_credentials):
            made.append((service, region, state_credentials.role_arn))
            return object()

        lambda_eval_utils.boto_client_for = make
        speedups.reuse_lambda_clients()
        role = SimpleNamespace(role_arn="arn:aws:iam::000000000000:role/a")
        other = SimpleNamespace(role_arn="arn:aws:iam::000000000000:role/b")
        first = lambda_eval_utils.boto_client_for("lambda", "us-east-1", role)
        self.assertIs(lambda_eval_utils.boto_client_for("lambda", "us-east-1", role), first)
        self.assertIsNot(lambda_eval_utils.boto_client_for("lambda", "us-east-1", other), first)
        self.assertEqual(len(made), 2)

    def test_a_successful_invocation_puts_no_metric_and_a_failed_one_still_does(self):
        from localstack.services.lambda_.invocation import metrics, version_manager

        put, saved = [], (metrics.publish_lambda_metric, version_manager.record_cw_metric_invocation)
        metrics.publish_lambda_metric = lambda metric, value, kwargs, **where: put.append(metric)
        try:
            version_manager.record_cw_metric_invocation("turn", "000000000000", "us-east-1")
            self.assertEqual(put, ["Invocations"], "LocalStack puts one before the fix")
            speedups.no_lambda_invocation_metrics()
            speedups.no_lambda_invocation_metrics()  # a second start wraps nothing twice
            version_manager.record_cw_metric_invocation("turn", "000000000000", "us-east-1")
            self.assertEqual(put, ["Invocations"])
            version_manager.record_cw_metric_error("notify", "000000000000", "us-east-1")
            self.assertEqual(put, ["Invocations", "Invocations", "Errors"])
        finally:
            metrics.publish_lambda_metric, version_manager.record_cw_metric_invocation = saved

    def test_an_sqs_call_puts_no_metric_and_the_queue_depth_worker_stays(self):
        from localstack.services.sqs import provider

        saved = provider.CloudwatchDispatcher.dispatch_sqs_metric
        dispatcher = provider.CloudwatchDispatcher.__new__(provider.CloudwatchDispatcher)
        submitted = []
        dispatcher.running = True
        dispatcher.executor = SimpleNamespace(submit=lambda *a, **k: submitted.append(k["metric"]))
        try:
            dispatcher.dispatch_sqs_metric("000000000000", "us-east-1", "q", "NumberOfEmptyReceives")
            self.assertEqual(submitted, ["NumberOfEmptyReceives"], "LocalStack puts one before the fix")
            speedups.no_sqs_call_metrics()
            speedups.no_sqs_call_metrics()  # a second start wraps nothing twice
            dispatcher.dispatch_sqs_metric("000000000000", "us-east-1", "q", "NumberOfMessagesSent")
            self.assertEqual(submitted, ["NumberOfEmptyReceives"])
            self.assertTrue(hasattr(provider, "CloudwatchPublishWorker"), "the depth worker is LocalStack's")
        finally:
            provider.CloudwatchDispatcher.dispatch_sqs_metric = saved


if __name__ == "__main__":
    unittest.main()
