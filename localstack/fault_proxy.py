"""A fault proxy between the stand-in's functions and LocalStack, for tests.

It forwards every request to LocalStack unchanged, except those a rule picks: those it
answers itself with an error, as a throttled or failing AWS endpoint would. The functions
reach it because the local Lambda executor points their AWS endpoint here
(STANDIN_AWS_PROXY); the tests' own observers talk to LocalStack directly.

    python fault_proxy.py --port 4599 --upstream http://127.0.0.1:4566

Control (JSON):
    POST   /__faults/rules   {"id": "r1", "target": "AmazonSQS.SendMessage",
                              "match": "<text in the body>", "status": 500,
                              "seconds": 10}
           target is the X-Amz-Target operation ("*" for any); match a text or a list of
           texts that must all be in the body; the rule lapses after
           `seconds`. Status 400 answers ThrottlingException, anything else InternalError.
    DELETE /__faults/rules/<id>
    GET    /__faults/stats   {"<rule id>": <requests refused>, "forwarded": n}
It listens on loopback only."""

from __future__ import annotations

import argparse
import http.client
import json
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOP_BY_HOP = {
    "connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer",
    "upgrade", "content-length",
}


class Faults:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rules: dict[str, dict] = {}
        self.stats: dict[str, int] = {"forwarded": 0}

    def add(self, rule: dict) -> None:
        rule = dict(rule, until=time.monotonic() + float(rule.get("seconds", 60)))
        with self._lock:
            self._rules[str(rule["id"])] = rule
            self.stats.setdefault(str(rule["id"]), 0)

    def remove(self, rule_id: str) -> None:
        with self._lock:
            self._rules.pop(rule_id, None)

    def pick(self, target: str, body: bytes) -> dict | None:
        now = time.monotonic()
        text = body.decode(errors="replace")
        with self._lock:
            for rule_id, rule in list(self._rules.items()):
                if rule["until"] < now:
                    del self._rules[rule_id]
                    continue
                if rule.get("target", "*") not in ("*", target):
                    continue
                wanted = rule.get("match", "")
                wanted = [wanted] if isinstance(wanted, str) else wanted
                if not all(w in text for w in wanted):
                    continue
                self.stats[rule_id] += 1
                return rule
            self.stats["forwarded"] += 1
        return None

    def snapshot(self) -> dict:
        with self._lock:
            return dict(self.stats)


def make_handler(faults: Faults, upstream: urllib.parse.SplitResult):
    local = threading.local()

    def connection() -> http.client.HTTPConnection:
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=120)
            local.conn = conn
        return conn

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _send(self, status: int, body: bytes, headers: list[tuple[str, str]]) -> None:
            self.send_response(status)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _json(self, status: int, value) -> None:
            self._send(status, json.dumps(value).encode(), [("Content-Type", "application/json")])

        def _body(self) -> bytes:
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        def _control(self, body: bytes) -> bool:
            if not self.path.startswith("/__faults/"):
                return False
            if self.command == "POST" and self.path == "/__faults/rules":
                faults.add(json.loads(body or b"{}"))
                self._json(200, {"ok": True})
            elif self.command == "DELETE" and self.path.startswith("/__faults/rules/"):
                faults.remove(self.path.rsplit("/", 1)[-1])
                self._json(200, {"ok": True})
            elif self.command == "GET" and self.path == "/__faults/stats":
                self._json(200, faults.snapshot())
            else:
                self._json(404, {"error": "no such control route"})
            return True

        def _handle(self) -> None:
            body = self._body()
            if self._control(body):
                return
            target = (self.headers.get("X-Amz-Target") or "").strip()
            rule = faults.pick(target, body)
            if rule is not None:
                throttle = int(rule.get("status", 500)) == 400
                kind = "ThrottlingException" if throttle else "InternalError"
                err = {"__type": kind, "message": f"injected by the fault proxy ({rule['id']})"}
                self._send(
                    int(rule.get("status", 500)),
                    json.dumps(err).encode(),
                    [("Content-Type", "application/x-amz-json-1.0"), ("x-amzn-query-error", f"{kind};Sender")],
                )
                return
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            headers["Content-Length"] = str(len(body))
            for attempt in (1, 2):
                conn = connection()
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    response = conn.getresponse()
                    payload = response.read()
                    break
                except (http.client.HTTPException, OSError):
                    conn.close()
                    local.conn = None
                    if attempt == 2:
                        self._json(502, {"error": "LocalStack unreachable from the fault proxy"})
                        return
            out = [(k, v) for k, v in response.getheaders() if k.lower() not in HOP_BY_HOP]
            self._send(response.status, payload, out)

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = _handle

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=4599)
    parser.add_argument("--upstream", default="http://127.0.0.1:4566")
    args = parser.parse_args()
    faults = Faults()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(faults, urllib.parse.urlsplit(args.upstream)))
    server.daemon_threads = True
    print(f"fault proxy on 127.0.0.1:{args.port} -> {args.upstream}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
