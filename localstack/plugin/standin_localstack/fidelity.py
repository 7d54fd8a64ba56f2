"""Makes LocalStack behave as AWS does where the tests depend on it.

LocalStack 2026.3 runs a function's asynchronous invocations (`InvocationType: Event`)
from a thread pool of Python's default size, min(32, cores + 4): six on a two-core
machine. Each invocation holds a thread until the function returns, so a function that
runs for minutes (the follow holds its agent's stream for a window) ran six at a time
and the rest waited in LocalStack's queue: with 40 followed stand-ins only six were
followed, and the others' parks timed out and followed again, to wait again. AWS runs
asynchronous invocations up to the function's concurrency. The pool is made as large as
the account's default concurrency; threads are started only as invocations need them."""

from concurrent.futures import ThreadPoolExecutor

from localstack.runtime import hooks

# AWS's default account concurrency: the most invocations AWS would run at once.
ASYNC_INVOKERS = 1000


@hooks.on_infra_start()
def run_async_invokes_concurrently():
    from localstack.services.lambda_.invocation import event_manager

    poller = event_manager.Poller
    if getattr(poller.__init__, "standin_widened", False):
        return
    original = poller.__init__

    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        narrow = self.invoker_pool
        self.invoker_pool = ThreadPoolExecutor(
            max_workers=ASYNC_INVOKERS, thread_name_prefix=narrow._thread_name_prefix
        )
        narrow.shutdown(wait=False)

    __init__.standin_widened = True
    poller.__init__ = __init__


# EventBridge refuses a PutEvents call whose entries together pass 256 KiB (each entry
# counted as its source, detail type, detail and resources in UTF-8 bytes, and 14 for a
# time), with a ValidationException for the whole call. LocalStack 2026.3 checks each
# entry's detail alone, so a call of ten 40 KB notes went through where AWS would refuse
# it: the tests of the note bus's batching need AWS's answer.
PUT_EVENTS_BYTES = 256 * 1024


def put_events_bytes(entries) -> int:
    def size(entry) -> int:
        text = [entry.get("Source"), entry.get("DetailType"), entry.get("Detail")]
        total = sum(len(t.encode()) for t in text if t)
        total += sum(len(r.encode()) for r in entry.get("Resources") or [])
        return total + (14 if entry.get("Time") else 0)

    return sum(size(entry) for entry in entries or [])


@hooks.on_infra_start()
def refuse_put_events_past_256_kib():
    from localstack.services.events.provider import EventsProvider, ValidationException

    original = EventsProvider.put_events
    if getattr(original, "standin_bounded", False):
        return

    def put_events(self, context, entries, *args, **kwargs):
        if put_events_bytes(entries) > PUT_EVENTS_BYTES:
            raise ValidationException("Total size of the entries in the request is over the limit.")
        return original(self, context, entries, *args, **kwargs)

    put_events.standin_bounded = True
    EventsProvider.put_events = put_events


# AWS runs an SQS event source mapping's batches at once, up to the mapping's
# ScalingConfig.MaximumConcurrency (unset, AWS scales to 1,250; here the account's 1,000).
# LocalStack 2026.3 hands each batch to the function synchronously in the mapping's one
# poller thread, so while a follower held its window (up to ten minutes) no other
# follow request was taken: with 300 stand-ins at once, followed stand-ins heard their
# agent 838 s late. The poller now hands each batch to a pool as wide as the mapping's
# concurrency and takes the next batch only while a slot is free, so no message waits
# received but unprocessed. FIFO queues keep LocalStack's way (the stand-in uses none).
SQS_BATCHES_WITHOUT_A_CAP = 1000


def run_batches_concurrently(poller, most: int, stopping) -> None:
    import logging
    import threading

    log = logging.getLogger(__name__)
    slots = threading.BoundedSemaphore(most)
    handle_one_batch, poll_once = poller.handle_messages, poller.poll_events

    def take_slot() -> bool:
        while not slots.acquire(timeout=1):
            if stopping.is_set():
                return False
        return True

    def handle_messages(messages):
        # A poll may hand over more than one batch (over 2,500 messages): each waits for
        # a slot; one left when the mapping stops is received again after its
        # visibility timeout, as any batch not deleted.
        if not take_slot():
            return

        def handle():
            try:
                handle_one_batch(messages)
            except Exception as error:  # as LocalStack's poller: logged, the batch redelivered
                log.warning("An SQS batch failed: %s", error, exc_info=log.isEnabledFor(logging.DEBUG))
            finally:
                slots.release()

        try:
            # Daemon threads, as the poller's own: a batch never holds LocalStack's exit.
            threading.Thread(target=handle, name="esm-sqs-batch", daemon=True).start()
        except BaseException:
            slots.release()
            raise

    def poll_events():
        # Only this thread takes slots, so a slot free now is still free at the hand-off.
        if not take_slot():
            return
        slots.release()
        poll_once()

    poller.handle_messages, poller.poll_events = handle_messages, poll_events


@hooks.on_infra_start()
def run_sqs_batches_concurrently():
    from localstack.services.lambda_.event_source_mapping.esm_worker import EsmWorker
    from localstack.services.lambda_.event_source_mapping.pollers.sqs_poller import SqsPoller

    original = EsmWorker.__init__
    if getattr(original, "standin_concurrent", False):
        return

    def __init__(self, esm_config, poller, *args, **kwargs):
        original(self, esm_config, poller, *args, **kwargs)
        # A FIFO queue's groups are taken one at a time, as LocalStack takes them.
        if isinstance(poller, SqsPoller) and not poller.queue_url.endswith(".fifo"):
            scaling = esm_config.get("ScalingConfig") or {}
            most = scaling.get("MaximumConcurrency") or SQS_BATCHES_WITHOUT_A_CAP
            run_batches_concurrently(poller, int(most), self._shutdown_event)

    __init__.standin_concurrent = True
    EsmWorker.__init__ = __init__


# AWS's pollers long-poll an SQS queue and invoke as soon as a message arrives.
# LocalStack's wait as long as the mapping's batching window, so a mapping without one
# (the webhooks') asked its queue four times a second while idle, each ask a request
# through the gateway with a CloudWatch datum of its own. Five seconds rather than AWS's
# twenty: a mapping deleted or updated waits for its last poll to end.
SQS_LONG_POLL_SECONDS = 5


@hooks.on_infra_start()
def long_poll_sqs_mappings():
    from localstack.services.lambda_.event_source_mapping.pollers.sqs_poller import SqsPoller

    original = SqsPoller.__init__
    if getattr(original, "standin_long_poll", False):
        return

    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        # A receive returns at its first message; only the wait for none grows.
        if not self.maximum_batching_window:
            self.maximum_batching_window = SQS_LONG_POLL_SECONDS

    __init__.standin_long_poll = True
    SqsPoller.__init__ = __init__


# AWS answers SendTaskHeartbeat with TaskTimedOut once the task is closed: "the task
# associated with the token has already been closed". LocalStack keeps a callback after
# its SendTaskSuccess and takes its heartbeats silently, so a follower whose park a push
# had rung went on following it. Heartbeats after the callback's outcome are refused as
# AWS refuses them (LocalStack's provider answers the refusal `TaskDoesNotExist`, not
# `TaskTimedOut`; the functions take either as the park's end); a late SendTaskSuccess
# stays accepted, as LocalStack has it.
@hooks.on_infra_start()
def refuse_heartbeats_of_a_closed_task():
    from localstack.services.stepfunctions.asl.eval.callback import callback

    original = callback.CallbackPoolManager.heartbeat
    if getattr(original, "standin_closed_refused", False):
        return

    def heartbeat(self, callback_id):
        endpoint = self._pool.get(callback_id, None)
        if endpoint is not None and endpoint.get_outcome() is not None:
            raise callback.CallbackNotifyConsumerError(
                callback_consumer_error=callback.CallbackConsumerTimeout()
            )
        return original(self, callback_id)

    heartbeat.standin_closed_refused = True
    callback.CallbackPoolManager.heartbeat = heartbeat
