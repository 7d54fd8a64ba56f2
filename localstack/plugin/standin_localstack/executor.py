"""A LocalStack Lambda runtime executor that runs a `provided` runtime's `bootstrap` as a
host process (no Docker): it serves the Runtime API on 127.0.0.1, spawns the bootstrap,
enforces the function's timeout by killing and respawning, reports a crash as
Runtime.ExitError, and frames the output in START/END/REPORT lines for CloudWatch Logs.

It builds on LocalStack-internal classes: pin the LocalStack version."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

from localstack import config
from localstack.services.lambda_.invocation.lambda_models import FunctionVersion, InvocationResult
from localstack.services.lambda_.invocation.runtime_executor import (
    LambdaRuntimeException,
    RuntimeExecutor,
)

from standin_localstack.invoke_faults import fault_for
from standin_localstack.runtime_api import Invocation, RuntimeApi, deadline_ms, error_body

LOG = logging.getLogger(__name__)
STOP_GRACE_S = 2.0
# How often a starting environment checks that its process still lives (its first poll
# ends the wait at once).
POLL_S = 0.1
# How often a waiting invocation checks that its process still lives. Every wake-up takes
# LocalStack's one interpreter lock: hundreds of invocations polling every 20 ms kept a
# core busy, and at 300 stand-ins at once four a second each still starved the rest.
AWAIT_POLL_S = 1.0
# Inherited from LocalStack's own environment; everything else comes from the function.
PASS_THROUGH = ("PATH", "LANG", "HOME", "TMPDIR", "SSL_CERT_FILE", "SSL_CERT_DIR")
# Where the tests learn the secret key of each function's role credentials (LocalStack
# makes them up for each function), to prove no agent is signed for with them and none
# leaks: set by scripts/test only, off everywhere else.
ROLE_KEYS_DIR = "STANDIN_TEST_ROLE_KEYS_DIR"


def share_role_key(env: dict[str, str]) -> None:
    """Writes the environment's access key id and secret key under the folder's
    `functions/`."""
    folder = os.environ.get(ROLE_KEYS_DIR)
    key_id, secret = env.get("AWS_ACCESS_KEY_ID"), env.get("AWS_SECRET_ACCESS_KEY")
    if not folder or not key_id or not secret:
        return
    path = Path(folder) / "functions"
    path.mkdir(parents=True, exist_ok=True)
    (path / key_id).write_text(secret)


class LogBuffer:
    """The process's output, line by line, with marks so each invoke takes its own part."""

    def __init__(self) -> None:
        self._lines: list[str] = []
        self._lock = threading.Lock()

    def append(self, line: str) -> None:
        with self._lock:
            self._lines.append(line.rstrip("\n"))

    def settle(self, quiet_s: float = 0.005, limit_s: float = 0.1) -> None:
        """Waits until no line has arrived for `quiet_s` (at most `limit_s`): what a
        function printed just before it answered may still be on its way from the pipe."""
        deadline = time.monotonic() + limit_s
        seen = self.mark()
        while time.monotonic() < deadline:
            time.sleep(quiet_s)
            now = self.mark()
            if now == seen:
                return
            seen = now

    def mark(self) -> int:
        with self._lock:
            return len(self._lines)

    def since(self, mark: int) -> str:
        with self._lock:
            return "\n".join(self._lines[mark:]) + "\n"

    def text(self) -> str:
        return self.since(0)


def code_dir(function_version: FunctionVersion) -> Path:
    code = function_version.config.code
    if code is None:
        raise LambdaRuntimeException("image functions are not supported by the host executor")
    return Path(code.get_unzipped_code_location())


class HostRuntimeExecutor(RuntimeExecutor):
    def __init__(self, id: str, function_version: FunctionVersion) -> None:
        super().__init__(id, function_version)
        self.api = RuntimeApi()
        self.logs = LogBuffer()
        self.env: dict[str, str] = {}
        self.process: subprocess.Popen | None = None
        self._lock = threading.Lock()

    # Lifecycle

    def start(self, env_vars: dict[str, str]) -> None:
        # LocalStack hands some values over as ints; a process environment wants strings.
        self.env = {k: str(v) for k, v in env_vars.items() if v is not None}
        share_role_key(self.env)
        self.api.start()
        self._spawn()
        startup = float(config.LAMBDA_RUNTIME_ENVIRONMENT_TIMEOUT)
        if not self._wait_ready(time.monotonic() + startup):
            self.stop()
            raise LambdaRuntimeException(f"bootstrap did not start: {self._tail()}")

    def stop(self) -> None:
        self._kill()
        self.api.stop()

    def _spawn(self) -> None:
        root = code_dir(self.function_version)
        bootstrap = root / "bootstrap"
        if not bootstrap.is_file():
            raise LambdaRuntimeException(
                f"no bootstrap in {root}: the host executor runs provided.* runtimes only"
            )
        env = {k: os.environ[k] for k in PASS_THROUGH if k in os.environ}
        env.update(self.env)
        # Tests may put a fault proxy between the functions and LocalStack, as a network
        # between a function and the AWS endpoints would be.
        proxy = os.environ.get("STANDIN_AWS_PROXY")
        if proxy:
            env["AWS_ENDPOINT_URL"] = proxy
        env["AWS_LAMBDA_RUNTIME_API"] = self.api.address
        env["LAMBDA_TASK_ROOT"] = str(root)
        self.api.connect()
        process = subprocess.Popen(
            [str(bootstrap)],
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        )
        with self._lock:
            self.process = process
        threading.Thread(target=self._pump, args=(process,), daemon=True).start()

    def _pump(self, process: subprocess.Popen) -> None:
        with process.stdout:
            for line in process.stdout:
                self.logs.append(line)

    def _kill(self) -> None:
        with self._lock:
            process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def _wait_ready(self, deadline: float) -> bool:
        while time.monotonic() < deadline:
            if self.api.polled.wait(POLL_S):
                return True
            with self._lock:
                exited = self.process is None or self.process.poll() is not None
            if exited:
                return False
        return False

    def _tail(self, lines: int = 20) -> str:
        return "\n".join(self.logs.text().splitlines()[-lines:]) or "(no output)"

    # Invocations

    def invoke(self, payload: dict[str, str]) -> InvocationResult:
        fault = fault_for(self.function_version.id.function_name, payload.get("payload") or "")
        if fault is not None and fault.action == "drop":
            # Delivered nowhere: the function never runs, as with an event Lambda lost.
            return InvocationResult(
                request_id=payload["invoke-id"], payload=b"null", is_error=False, logs=""
            )
        if fault is not None and fault.action == "delay":
            time.sleep(fault.seconds)
        result = self._invoke(payload)
        if fault is not None and fault.action == "twice":
            # The same event delivered again (Lambda's at-least-once delivery).
            again = dict(payload, **{"invoke-id": f"{payload['invoke-id']}-again"})
            self._invoke(again)
        return result

    def _invoke(self, payload: dict[str, str]) -> InvocationResult:
        request_id = payload["invoke-id"]
        timeout_s = float(self.env.get("AWS_LAMBDA_FUNCTION_TIMEOUT", "3"))
        mark = self.logs.mark()
        self.logs.append(f"START RequestId: {request_id} Version: $LATEST")
        started = time.monotonic()
        body = payload.get("payload") or ""
        invocation = Invocation(
            request_id=request_id,
            payload=body.encode() if isinstance(body, str) else body,
            function_arn=payload.get("invoked-function-arn", ""),
            trace_id=payload.get("trace-id", ""),
            deadline_ms=deadline_ms(timeout_s),
        )
        self._ensure_running()
        self.api.submit(invocation)
        result, is_error = self._await(invocation, started + timeout_s)
        elapsed_ms = (time.monotonic() - started) * 1000
        self.logs.settle()
        self.logs.append(f"END RequestId: {request_id}")
        self.logs.append(
            f"REPORT RequestId: {request_id}\tDuration: {elapsed_ms:.2f} ms\t"
            f"Billed Duration: {int(elapsed_ms) + 1} ms\t"
            f"Memory Size: {self.env.get('AWS_LAMBDA_FUNCTION_MEMORY_SIZE', '128')} MB\t"
            f"Max Memory Used: {self._peak_mb()} MB"
        )
        return InvocationResult(
            request_id=request_id, payload=result, is_error=is_error, logs=self.logs.since(mark)
        )

    def _peak_mb(self) -> int:
        """The process's peak resident memory so far (VmHWM), as Lambda's REPORT line
        gives the environment's: what a test reads to see memory stay bounded."""
        with self._lock:
            pid = None if self.process is None else self.process.pid
        try:
            with open(f"/proc/{pid}/status", encoding="ascii") as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) // 1024
        except (OSError, ValueError):
            pass
        return 0

    def _ensure_running(self) -> None:
        with self._lock:
            alive = self.process is not None and self.process.poll() is None
        if not alive:
            self._spawn()

    def _await(self, invocation: Invocation, deadline: float) -> tuple[bytes, bool]:
        while not invocation.done.wait(AWAIT_POLL_S):
            with self._lock:
                code = None if self.process is None else self.process.poll()
            if code is not None:
                self.api.forget(invocation.request_id)
                self._respawn_quietly()
                detail = f"exit status {code}" if code >= 0 else f"signal: {signal.Signals(-code).name.lower()}"
                return (
                    error_body(
                        "Runtime.ExitError",
                        f"RequestId: {invocation.request_id} Error: Runtime exited with error: {detail}",
                    ),
                    True,
                )
            if time.monotonic() >= deadline:
                self.api.forget(invocation.request_id)
                seconds = float(self.env.get("AWS_LAMBDA_FUNCTION_TIMEOUT", "3"))
                self.logs.append(f"{invocation.request_id} Task timed out after {seconds:.2f} seconds")
                self._kill()
                self._respawn_quietly()
                return (
                    error_body("Sandbox.Timedout", f"Task timed out after {seconds:.2f} seconds"),
                    True,
                )
        return invocation.result or b"", invocation.is_error

    def _respawn_quietly(self) -> None:
        """After a crash or a timeout the environment gets a fresh process, as on AWS."""
        self._kill()
        try:
            self._spawn()
        except LambdaRuntimeException as e:
            LOG.warning("respawn of %s failed: %s", self.id, e)

    # Addresses and logs

    def get_address(self) -> str:
        return "127.0.0.1"

    def get_endpoint_from_executor(self) -> str:
        return "127.0.0.1"

    def get_runtime_endpoint(self) -> str:
        return f"http://127.0.0.1:{config.GATEWAY_LISTEN[0].port}/_localstack_lambda/{self.id}"

    def get_logs(self) -> str:
        return self.logs.text()

    # Versions

    @classmethod
    def prepare_version(cls, function_version: FunctionVersion) -> None:
        code = function_version.config.code
        if code is None:
            return
        code.prepare_for_execution()
        bootstrap = code_dir(function_version) / "bootstrap"
        if bootstrap.is_file():
            bootstrap.chmod(bootstrap.stat().st_mode | 0o111)

    @classmethod
    def cleanup_version(cls, function_version: FunctionVersion) -> None:
        pass

    @classmethod
    def validate_environment(cls) -> bool:
        return True
