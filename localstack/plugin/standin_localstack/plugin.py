"""Registers the host-process executor under LAMBDA_RUNTIME_EXECUTOR=host."""

from localstack.services.lambda_.invocation.plugins import RuntimeExecutorPlugin


class HostRuntimeExecutorPlugin(RuntimeExecutorPlugin):
    name = "host"

    def load(self, *args, **kwargs):
        from standin_localstack.executor import HostRuntimeExecutor

        return HostRuntimeExecutor
