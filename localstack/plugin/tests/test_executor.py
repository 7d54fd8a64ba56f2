"""Tests of the host-process executor against a real bootstrap process (no LocalStack server)."""

import json
import os
import stat
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path
from types import SimpleNamespace

from localstack.services.lambda_.invocation.runtime_executor import LambdaRuntimeException

from standin_localstack.executor import HostRuntimeExecutor

FAKE = Path(__file__).with_name("fake_bootstrap.py")


def function_version(code_dir: Path):
    code = SimpleNamespace(
        get_unzipped_code_location=lambda: code_dir, prepare_for_execution=lambda: None
    )
    return SimpleNamespace(
        config=SimpleNamespace(code=code), id=SimpleNamespace(function_name="stack-ParkFunction-X")
    )


class ExecutorCase(unittest.TestCase):
    """Starts executors on the fake bootstrap; stops them after each test."""

    def setUp(self):
        self.dir = Path(tempfile.mkdtemp())
        bootstrap = self.dir / "bootstrap"
        bootstrap.write_text(f"#!{sys.executable}\n" + FAKE.read_text())
        bootstrap.chmod(0o644)  # prepare_version must make it executable
        self.env = {"AWS_LAMBDA_FUNCTION_TIMEOUT": 2, "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": 128, "GREETING": "hi"}
        self.started = []

    def tearDown(self):
        for executor in self.started:
            executor.stop()

    def start(self, env=None):
        fv = function_version(self.dir)
        HostRuntimeExecutor.prepare_version(fv)
        executor = HostRuntimeExecutor("env-1", fv)
        executor.start({**self.env, **(env or {})})
        self.started.append(executor)
        return executor

    def invoke(self, executor, event, request_id="req-1"):
        return executor.invoke({"invoke-id": request_id, "invoked-function-arn": "arn:fn", "payload": json.dumps(event), "trace-id": "Root=1"})


class ExecutorTest(ExecutorCase):
    def test_prepare_makes_bootstrap_executable_and_invoke_returns_the_response(self):
        executor = self.start()
        self.assertTrue((self.dir / "bootstrap").stat().st_mode & stat.S_IXUSR)
        result = self.invoke(executor, {"n": 1})
        self.assertFalse(result.is_error)
        body = json.loads(result.payload)
        self.assertEqual(body["echo"], {"n": 1})
        self.assertEqual(body["env"], "hi", "function environment reaches the process")
        self.assertGreater(body["deadline_left_ms"], 0)
        self.assertIn("START RequestId: req-1", result.logs)
        self.assertIn("handling {'n': 1}", result.logs)
        self.assertIn("REPORT RequestId: req-1", result.logs)

    def test_process_is_reused_between_invocations(self):
        executor = self.start()
        first = json.loads(self.invoke(executor, {}, "a").payload)["pid"]
        second = json.loads(self.invoke(executor, {}, "b").payload)["pid"]
        self.assertEqual(first, second)

    def test_handler_error_is_reported_as_an_error(self):
        executor = self.start()
        result = self.invoke(executor, {"error": "bad input"})
        self.assertTrue(result.is_error)
        self.assertEqual(json.loads(result.payload), {"errorType": "Handled", "errorMessage": "bad input"})

    def test_timeout_kills_and_respawns(self):
        executor = self.start()
        before = json.loads(self.invoke(executor, {}, "a").payload)["pid"]
        result = self.invoke(executor, {"sleep": 30}, "slow")
        self.assertTrue(result.is_error)
        self.assertEqual(json.loads(result.payload)["errorType"], "Sandbox.Timedout")
        self.assertIn("Task timed out after 2.00 seconds", result.logs)
        after = self.invoke(executor, {}, "c")
        self.assertFalse(after.is_error)
        self.assertNotEqual(json.loads(after.payload)["pid"], before, "a fresh process")

    def test_crash_is_runtime_exit_error_and_the_next_invoke_works(self):
        executor = self.start()
        result = self.invoke(executor, {"exit": 7})
        self.assertTrue(result.is_error)
        self.assertEqual(json.loads(result.payload)["errorType"], "Runtime.ExitError")
        self.assertIn("exit status 7", json.loads(result.payload)["errorMessage"])
        self.assertFalse(self.invoke(executor, {}, "after").is_error)

    def test_failing_init_fails_start_with_the_output(self):
        fv = function_version(self.dir)
        HostRuntimeExecutor.prepare_version(fv)
        executor = HostRuntimeExecutor("env-2", fv)
        with self.assertRaises(LambdaRuntimeException) as caught:
            executor.start({**self.env, "FAIL_AT_INIT": "1"})
        self.assertIn("init failing on purpose", str(caught.exception))

    def test_missing_bootstrap_is_a_clear_error(self):
        (self.dir / "bootstrap").unlink()
        executor = HostRuntimeExecutor("env-3", function_version(self.dir))
        with self.assertRaises(LambdaRuntimeException) as caught:
            executor.start(self.env)
        self.assertIn("no bootstrap", str(caught.exception))

    def test_environments_run_concurrently(self):
        executors = [self.start() for _ in range(3)]
        results = [None] * 3

        def run(i):
            results[i] = self.invoke(executors[i], {"sleep": 1, "i": i}, f"r{i}")

        threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        pids = {json.loads(r.payload)["pid"] for r in results}
        self.assertEqual(len(pids), 3)
        self.assertTrue(all(not r.is_error for r in results))

    def test_stop_leaves_no_process(self):
        executor = self.start()
        pid = json.loads(self.invoke(executor, {}).payload)["pid"]
        executor.stop()
        self.started.remove(executor)
        with self.assertRaises(ProcessLookupError):
            os.kill(pid, 0)

    def test_an_idle_environment_waits_without_waking_and_still_stops_at_once(self):
        executor = self.start()
        self.invoke(executor, {})
        server = executor.api._server
        self.assertIsNone(server.timeout, "its runtime API waits for a connection, never polls")
        began = time.monotonic()
        executor.stop()
        self.started.remove(executor)
        self.assertLess(time.monotonic() - began, 3.0)
        self.assertFalse(executor.api._thread.is_alive(), "its server thread ended")


class InvokeFaultTest(ExecutorCase):
    """Rules in STANDIN_INVOKE_FAULTS: Lambda's delivery late, twice, or never."""

    def setUp(self):
        super().setUp()
        self.faults = Path(tempfile.mkdtemp())
        os.environ["STANDIN_INVOKE_FAULTS"] = str(self.faults)

    def tearDown(self):
        del os.environ["STANDIN_INVOKE_FAULTS"]
        super().tearDown()

    def rule(self, name, **rule):
        (self.faults / f"{name}.json").write_text(json.dumps(rule))

    def test_a_dropped_invocation_never_runs_and_only_once(self):
        executor = self.start()
        self.rule("drop-1", function="ParkFunction", match="task-7", action="drop", times=1)
        dropped = self.invoke(executor, {"task_id": "task-7"}, "a")
        self.assertNotIn("handling", dropped.logs)
        self.assertNotIn("handling", executor.get_logs())
        again = self.invoke(executor, {"task_id": "task-7"}, "b")
        self.assertIn("handling", again.logs, "the rule was used up")

    def test_a_delayed_invocation_runs_late(self):
        executor = self.start()
        self.rule("late", function="ParkFunction", match="task-8", action="delay", seconds=1.5, times=1)
        started = time.monotonic()
        result = self.invoke(executor, {"task_id": "task-8"})
        self.assertGreaterEqual(time.monotonic() - started, 1.5)
        self.assertIn("handling", result.logs)

    def test_a_doubled_invocation_runs_twice(self):
        executor = self.start()
        self.rule("twice", function="ParkFunction", match="task-9", action="twice", times=1)
        self.invoke(executor, {"task_id": "task-9"})
        self.assertEqual(executor.get_logs().count("handling {'task_id': 'task-9'}"), 2)

    def test_rules_for_other_functions_or_payloads_change_nothing(self):
        executor = self.start()
        self.rule("other", function="WakeFunction", match="task-7", action="drop", times=5)
        self.rule("elsewhere", function="ParkFunction", match="task-1", action="drop", times=5)
        self.assertIn("handling", self.invoke(executor, {"task_id": "task-7"}).logs)


if __name__ == "__main__":
    unittest.main()
