"""Makes LocalStack's Step Functions fast enough for hundreds of executions on two cores.

LocalStack 2026.3 evaluates every JSONPath of a state machine (Choice variables,
Parameters, TimeoutSecondsPath, ResultPath) by parsing it anew, and `jsonpath_ng.ext`
builds its LALR parser tables on every parse: about 35 ms per path here. Under the soak
that was two thirds of LocalStack's CPU, and every state transition waited for it. A
parsed path is never changed by evaluating it, so the parses are cached. Each change here is a LocalStack speed fix only: what
the state machine computes is the same."""

import functools
import threading

from localstack.runtime import hooks


@hooks.on_infra_start()
def cache_jsonpath_parsing():
    from localstack.services.stepfunctions.asl.component.common.path import result_path
    from localstack.services.stepfunctions.asl.utils import json_path

    for module in (json_path, result_path):
        if not hasattr(module.parse, "cache_info"):
            module.parse = functools.lru_cache(maxsize=4096)(module.parse)


@hooks.on_infra_start()
def reuse_lambda_clients():
    """Every Lambda task state made a new boto client, after an in-memory AssumeRole, to
    invoke its function: a tenth of LocalStack's CPU under the soak. The client depends
    only on the service, the region and the state machine's role, so it is kept."""
    from localstack.services.stepfunctions.asl.component.state.state_execution.state_task import (
        lambda_eval_utils,
    )

    make = lambda_eval_utils.boto_client_for
    if getattr(make, "standin_cached", False):
        return
    clients = {}
    lock = threading.Lock()

    def boto_client_for(service, region, state_credentials):
        key = (service, region, state_credentials.role_arn)
        with lock:
            client = clients.get(key)
        if client is None:
            client = make(service=service, region=region, state_credentials=state_credentials)
            with lock:
                clients.setdefault(key, client)
        return client

    boto_client_for.standin_cached = True
    lambda_eval_utils.boto_client_for = boto_client_for


@hooks.on_infra_start()
def no_lambda_invocation_metrics():
    """Each Lambda invocation that succeeded put an `AWS/Lambda` `Invocations` datum
    into LocalStack's CloudWatch: one more request through the gateway and a SQLite
    write per invocation, most of the CPU that metrics took under the soak. On AWS the
    service records them apart from the functions' work, and no alarm of the stack
    reads them. A failed invocation still records `Invocations` and `Errors`, which
    `NotifyErrorsAlarm` watches."""
    from localstack.services.lambda_.invocation import version_manager

    if getattr(version_manager.record_cw_metric_invocation, "standin_dropped", False):
        return

    def dropped(function_name: str, account_id: str, region_name: str) -> None:
        return None

    dropped.standin_dropped = True
    version_manager.record_cw_metric_invocation = dropped


@hooks.on_infra_start()
def no_sqs_call_metrics():
    """SQS put a CloudWatch datum for every send, receive and delete, an empty receive
    included: a second request through the gateway for each (with the mappings' polls,
    the most of the metrics' CPU under the soak). On AWS the service counts them apart
    from the queue's work, and no alarm of the stack reads them. The queue-depth metrics
    (`ApproximateNumberOfMessagesVisible`, the age of the oldest), which the stack's
    alarms read, are LocalStack's worker's, once a minute, and stay."""
    from localstack.services.sqs.provider import CloudwatchDispatcher

    if getattr(CloudwatchDispatcher.dispatch_sqs_metric, "standin_dropped", False):
        return

    def dropped(self, account_id, region, queue_name, metric, value=1, unit="Count"):
        return None

    dropped.standin_dropped = True
    CloudwatchDispatcher.dispatch_sqs_metric = dropped
