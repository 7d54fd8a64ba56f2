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
