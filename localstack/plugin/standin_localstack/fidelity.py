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
