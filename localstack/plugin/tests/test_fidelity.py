"""Tests of the fidelity fixes: LocalStack runs asynchronous invocations as AWS would."""

import threading
import time
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

    def test_an_sqs_mappings_batches_run_at_once_up_to_its_maximum_concurrency(self):
        most, held = 5, threading.Barrier(5 + 1, timeout=10)
        release, stopping, polls = threading.Event(), threading.Event(), []
        poller = SimpleNamespace(close=lambda: None)

        def handle_messages(messages):
            held.wait()
            release.wait(10)

        def poll_events():
            polls.append(1)
            poller.handle_messages([{"MessageId": str(len(polls))}])

        poller.handle_messages, poller.poll_events = handle_messages, poll_events
        fidelity.run_batches_concurrently(poller, most, stopping)
        for _ in range(most):
            poller.poll_events()  # each hands its batch off and returns at once
        held.wait()  # raises BrokenBarrierError unless all five ran at once
        # Every slot is taken: the next batch is not received until the mapping stops.
        sixth = threading.Thread(target=poller.poll_events)
        sixth.start()
        sixth.join(1.5)
        self.assertTrue(sixth.is_alive(), "a sixth batch was taken past the maximum")
        self.assertEqual(len(polls), most)
        stopping.set()
        sixth.join(5)
        self.assertFalse(sixth.is_alive())
        self.assertEqual(len(polls), most, "a stopping mapping takes no more batches")
        release.set()

    def test_a_failed_batch_gives_its_slot_back_and_a_stopping_mapping_drops_the_next(self):
        stopping, ran = threading.Event(), []
        poller = SimpleNamespace(close=lambda: None)

        def handle_messages(messages):
            ran.append(messages)
            raise RuntimeError("the function failed")

        poller.handle_messages, poller.poll_events = handle_messages, lambda: None
        fidelity.run_batches_concurrently(poller, 1, stopping)
        for batch in range(3):  # one slot: each runs only once the one before gave it back
            poller.handle_messages([batch])
        deadline = time.monotonic() + 5
        while len(ran) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(ran, [[0], [1], [2]])
        # A poll that hands over a second batch while the only slot is taken, as the
        # mapping stops: the batch is left to the queue, nothing waits for ever.
        block = threading.Event()
        poller2 = SimpleNamespace(handle_messages=lambda m: block.wait(10), poll_events=lambda: None)
        fidelity.run_batches_concurrently(poller2, 1, stopping)
        poller2.handle_messages(["first"])
        stopping.set()
        second = threading.Thread(target=poller2.handle_messages, args=(["second"],))
        second.start()
        second.join(5)
        self.assertFalse(second.is_alive(), "a stopping mapping does not wait for a slot")
        block.set()

    def test_only_sqs_mappings_run_their_batches_concurrently_at_their_configured_maximum(self):
        from localstack.services.lambda_.event_source_mapping.esm_worker import EsmWorker
        from localstack.services.lambda_.event_source_mapping.pollers.sqs_poller import SqsPoller

        original, widened = EsmWorker.__init__, []
        EsmWorker.__init__ = lambda self, config, poller, *a, **k: setattr(
            self, "_shutdown_event", threading.Event())
        saved = fidelity.run_batches_concurrently
        fidelity.run_batches_concurrently = lambda poller, most, stopping: widened.append(most)
        try:
            fidelity.run_sqs_batches_concurrently()
            fidelity.run_sqs_batches_concurrently()  # a second start wraps nothing twice
            sqs = SqsPoller.__new__(SqsPoller)
            sqs.queue_url = "http://127.0.0.1:4566/queue/us-east-1/000000000000/follow"
            fifo = SqsPoller.__new__(SqsPoller)
            fifo.queue_url = "http://127.0.0.1:4566/queue/us-east-1/000000000000/notes.fifo"
            EsmWorker({"ScalingConfig": {"MaximumConcurrency": 20}}, sqs)
            EsmWorker({}, sqs)
            EsmWorker({"ScalingConfig": {"MaximumConcurrency": 20}}, object())
            EsmWorker({"ScalingConfig": {"MaximumConcurrency": 20}}, fifo)
            self.assertEqual(widened, [20, fidelity.SQS_BATCHES_WITHOUT_A_CAP])
        finally:
            EsmWorker.__init__ = original
            fidelity.run_batches_concurrently = saved

    def test_an_sqs_mapping_without_a_batching_window_long_polls_as_aws_does(self):
        from localstack.services.lambda_.event_source_mapping.pollers.sqs_poller import SqsPoller

        original = SqsPoller.__init__
        SqsPoller.__init__ = lambda self, window: setattr(self, "maximum_batching_window", window)
        try:
            fidelity.long_poll_sqs_mappings()
            fidelity.long_poll_sqs_mappings()  # a second start wraps nothing twice
            self.assertEqual(SqsPoller(0).maximum_batching_window, fidelity.SQS_LONG_POLL_SECONDS)
            self.assertEqual(SqsPoller(1).maximum_batching_window, 1, "a window of its own stays")
            self.assertTrue(0 < fidelity.SQS_LONG_POLL_SECONDS <= 20, "SQS waits at most 20 s")
        finally:
            SqsPoller.__init__ = original

    def test_a_heartbeat_after_the_tasks_success_is_refused(self):
        from localstack.services.stepfunctions.asl.eval.callback import callback

        original = callback.CallbackPoolManager.heartbeat
        try:
            pool = callback.CallbackPoolManager(activity_store={})
            pool.add("parked").setup_heartbeat_endpoint(heartbeat_seconds=30)
            self.assertTrue(pool.heartbeat("parked"), "LocalStack takes a heartbeat while parked")
            pool.notify("parked", callback.CallbackOutcomeSuccess(callback_id="parked", output="{}"))
            self.assertTrue(pool.heartbeat("parked"), "and, before the fix, after its success too")
            fidelity.refuse_heartbeats_of_a_closed_task()
            fidelity.refuse_heartbeats_of_a_closed_task()  # a second start wraps nothing twice
            with self.assertRaises(callback.CallbackNotifyConsumerError) as refused:
                pool.heartbeat("parked")
            self.assertIsInstance(refused.exception.callback_consumer_error,
                                  callback.CallbackConsumerTimeout)
            pool.add("waiting").setup_heartbeat_endpoint(heartbeat_seconds=30)
            self.assertTrue(pool.heartbeat("waiting"), "a task still waiting takes its heartbeat")
            self.assertFalse(pool.heartbeat("unknown"))
        finally:
            callback.CallbackPoolManager.heartbeat = original


if __name__ == "__main__":
    unittest.main()
