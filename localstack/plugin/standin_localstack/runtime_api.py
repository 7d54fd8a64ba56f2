"""The Lambda Runtime API (2018-06-01) served on 127.0.0.1 for one function process.

The process polls /invocation/next; an invocation is handed to it there and completed by
its /response or /error post. Nothing here knows about LocalStack."""

from __future__ import annotations

import json
import queue
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PREFIX = "/2018-06-01/runtime"
_RESULT = re.compile(rf"^{PREFIX}/invocation/([^/]+)/(response|error)$")


@dataclass
class Invocation:
    request_id: str
    payload: bytes
    function_arn: str
    trace_id: str
    deadline_ms: int
    done: threading.Event = field(default_factory=threading.Event)
    result: bytes | None = None
    is_error: bool = False


class RuntimeApi:
    """One server per execution environment; `connect()` starts a fresh channel for each
    process, so a killed process's pending poll cannot take a later invocation."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: queue.Queue[Invocation | None] = queue.Queue()
        self._inflight: dict[str, Invocation] = {}
        self.polled = threading.Event()
        self.init_error: bytes | None = None
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Each reply is one write, sent at once: written as headers and then a body,
            # Nagle's algorithm held the body until the function acknowledged the
            # headers, and a delayed ACK made that 40 ms: about two invocations in five
            # started 45 to 55 ms late.
            disable_nagle_algorithm = True

            def log_message(self, *args):  # the function's own output is the log
                pass

            def _reply(self, status: int, body: bytes = b"", headers: dict | None = None):
                fields = {**(headers or {}), "Content-Length": str(len(body))}
                head = f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n" + "".join(
                    f"{k}: {v}\r\n" for k, v in fields.items()
                )
                self.wfile.write(head.encode("latin-1") + b"\r\n" + body)

            def do_GET(self):
                if self.path != f"{PREFIX}/invocation/next":
                    return self._reply(404)
                channel = api._pending
                api.polled.set()
                invocation = channel.get()
                if invocation is None:  # the process is being replaced
                    return self._reply(500, b'{"errorType":"Runtime.Stopped"}')
                self._reply(
                    200,
                    invocation.payload,
                    {
                        "Content-Type": "application/json",
                        "Lambda-Runtime-Aws-Request-Id": invocation.request_id,
                        "Lambda-Runtime-Deadline-Ms": str(invocation.deadline_ms),
                        "Lambda-Runtime-Invoked-Function-Arn": invocation.function_arn,
                        "Lambda-Runtime-Trace-Id": invocation.trace_id,
                    },
                )

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if self.path == f"{PREFIX}/init/error":
                    api.init_error = body or b'{"errorType":"Runtime.InitError"}'
                    return self._reply(202, b'{"status":"OK"}')
                match = _RESULT.match(self.path)
                if not match:
                    return self._reply(404)
                with api._lock:
                    invocation = api._inflight.pop(match.group(1), None)
                if invocation is None:
                    return self._reply(400, b'{"errorType":"InvalidRequestID"}')
                invocation.result = body
                invocation.is_error = match.group(2) == "error"
                invocation.done.set()
                self._reply(202, b'{"status":"OK"}')

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        # Waits for connections without waking: serve_forever looks for its stop twice a
        # second, and a thousand idle environments doing so took LocalStack's interpreter
        # lock 2,000 times a second. `stop` wakes the wait with a connection instead.
        self._server.timeout = None
        self._stopping = False
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while not self._stopping:
            self._server.handle_request()

    @property
    def address(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{host}:{port}"

    def start(self) -> None:
        self._thread.start()

    def connect(self) -> None:
        """A new process is about to poll: release the old channel, open a new one."""
        with self._lock:
            self._pending.put(None)
            self._pending = queue.Queue()
            self.polled = threading.Event()
            self.init_error = None

    def submit(self, invocation: Invocation) -> None:
        with self._lock:
            self._inflight[invocation.request_id] = invocation
            self._pending.put(invocation)

    def forget(self, request_id: str) -> None:
        with self._lock:
            self._inflight.pop(request_id, None)

    def stop(self) -> None:
        with self._lock:
            self._pending.put(None)
        self._stopping = True
        if self._thread.is_alive():
            try:
                socket.create_connection(self._server.server_address[:2], timeout=1).close()
            except OSError:
                pass
            self._thread.join(timeout=2)
        self._server.server_close()


def deadline_ms(timeout_s: float) -> int:
    return int((time.time() + timeout_s) * 1000)


def error_body(error_type: str, message: str) -> bytes:
    return json.dumps({"errorType": error_type, "errorMessage": message}).encode()
