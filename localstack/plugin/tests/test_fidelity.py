"""Tests of the fidelity fixes: LocalStack runs asynchronous invocations as AWS would."""

import threading
import unittest
from types import SimpleNamespace

from standin_localstack import fidelity


class FidelityTest(unittest.TestCase):
    def test_a_functions_async_invocations_run_at_once_not_six_at_a_time(self):
        from localstack.services.lambda_.invocation import event_manager

        fidelity.run_async_invokes_concurrently()
        fidelity.run_async_invokes_concurrently()  # a second start wraps nothing twice
        function_id = SimpleNamespace(
            function_name="follow", qualifier="$LATEST", account="000000000000", region="us-east-1"
        )
        version = SimpleNamespace(function_version=SimpleNamespace(id=function_id))
        poller = event_manager.Poller(version, "http://127.0.0.1:4566/queue/q")
        try:
            # As many long invocations as a two-core machine's default pool held, and more:
            # every one of them runs before any returns.
            held = 40
            started = threading.Barrier(held + 1, timeout=10)
            release = threading.Event()

            def invocation():
                started.wait()
                release.wait(10)

            for _ in range(held):
                poller.invoker_pool.submit(invocation)
            started.wait()  # raises BrokenBarrierError if fewer ran at once
            release.set()
        finally:
            poller.invoker_pool.shutdown(wait=True)

    def test_a_put_events_call_past_256_kib_is_refused_whole_as_aws_does(self):
        from localstack.services.events.provider import EventsProvider, ValidationException

        original = EventsProvider.put_events
        calls = []
        EventsProvider.put_events = lambda self, context, entries, *a, **k: calls.append(entries) or {}
        try:
            fidelity.refuse_put_events_past_256_kib()
            fidelity.refuse_put_events_past_256_kib()  # a second start wraps nothing twice
            note = {"Source": "standin", "DetailType": "COMPLETED", "Detail": "x" * 40_000}
            provider = EventsProvider.__new__(EventsProvider)
            with self.assertRaises(ValidationException):
                provider.put_events(None, [note] * 10)
            self.assertEqual(calls, [], "nothing of the refused call was put")
            provider.put_events(None, [note] * 6)
            self.assertEqual(len(calls), 1)
            self.assertEqual(fidelity.put_events_bytes([dict(note, Time="t", Resources=["ab"])]),
                             7 + 9 + 40_000 + 2 + 14)
        finally:
            EventsProvider.put_events = original


if __name__ == "__main__":
    unittest.main()
