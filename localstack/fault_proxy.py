"""A fault proxy between the stand-in's functions and LocalStack, for tests.

It forwards every request to LocalStack unchanged, except those a rule picks: those it
answers itself with an error (a throttled or failing AWS endpoint), delays, or drops
(the connection closes before the request is forwarded, or after it was served and
before the answer). The functions reach it because the local Lambda executor points
their AWS endpoint here (STANDIN_AWS_PROXY); the tests' own observers talk to LocalStack
directly.

    python fault_proxy.py --port 4599 --upstream http://127.0.0.1:4566 [--profile FILE]

A rule (JSON):
    {"id": "r1", "target": "AmazonSQS.SendMessage", "match": "<text in the body>",
     "action": "error", "rate": 0.1, "ms": 300, "start": 0, "seconds": 10}
    target   the X-Amz-Target operation; "*" for any, "DynamoDB_20120810.*" for a service
    match    a text, or a list of texts that must all be in the body (default: any body)
    action   error (500 InternalError), throttle (400 ThrottlingException), delay (`ms`,
             then forwarded), drop (closed unanswered, not forwarded), lose_answer
             (forwarded and served, then closed unanswered); default: error, or throttle
             when "status" is 400
    rate     the share of matching calls the rule takes (default 1)
    times    the rule takes at most this many calls (default: no limit)
    start    seconds from now until the rule applies (default 0); it lapses `seconds`
             (default 60) after that
A profile is {"windows": [{"start": s, "seconds": d, "rules": [rule without id, ...]}]}:
every rule of a window applies from `start` for `seconds`, counted from when the profile
is loaded (at startup with --profile, or by POST /__faults/profile).

Control:
    POST   /__faults/rules     a rule
    POST   /__faults/profile   a profile (its rules are named w<window>.<rule>)
    DELETE /__faults/rules/<id>
    DELETE /__faults/rules     every rule
    GET    /__faults/stats     {"<rule id>": <calls taken>, "forwarded": <calls that
                                reached LocalStack, delayed and lost answers included>,
                                "by_action": {"error": n, ...}, "by_target": {"<target>": n}}
                               (a call with no X-Amz-Target, S3's and Lambda's, counts as
                               "<METHOD> /<first path segment>")
It listens on loopback only."""

from __future__ import annotations

import argparse
import http.client
import json
import random
import socket
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOP_BY_HOP = {
    "connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer",
    "upgrade", "content-length",
}
ACTIONS = ("error", "throttle", "delay", "drop", "lose_answer")


def targets(pattern: str, target: str) -> bool:
    if pattern == "*":
        return True
    if pattern.endswith(".*"):
        return target.startswith(pattern[:-1])
    return pattern == target


def untargeted(method: str, path: str) -> str:
    """A name for a call without X-Amz-Target (S3, Lambda): its method and first path
    segment, which rules can name as they name a target."""
    first = path.split("?", 1)[0].lstrip("/").split("/", 1)[0]
    return f"{method} /{first}"


class Faults:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rules: dict[str, dict] = {}
        self.stats: dict[str, int] = {"forwarded": 0}
        self.by_action: dict[str, int] = {a: 0 for a in ACTIONS}
        self.by_target: dict[str, int] = {}

    def add(self, rule: dict) -> None:
        action = rule.get("action") or ("throttle" if int(rule.get("status", 500)) == 400 else "error")
        if action not in ACTIONS:
            raise ValueError(f"rule {rule.get('id')}: action must be one of {', '.join(ACTIONS)}")
        rate = float(rule.get("rate", 1))
        if not 0 <= rate <= 1:
            raise ValueError(f"rule {rule.get('id')}: rate must be between 0 and 1")
        begins = time.monotonic() + float(rule.get("start", 0))
        rule = dict(rule, action=action, rate=rate, begins=begins,
                    until=begins + float(rule.get("seconds", 60)))
        with self._lock:
            self._rules[str(rule["id"])] = rule
            self.stats.setdefault(str(rule["id"]), 0)

    def load_profile(self, profile: dict) -> None:
        for w, window in enumerate(profile.get("windows", [])):
            for r, rule in enumerate(window.get("rules", [])):
                self.add(dict(rule, id=f"w{w}.{r}", start=window.get("start", 0),
                              seconds=window.get("seconds", 60)))

    def remove(self, rule_id: str) -> None:
        with self._lock:
            self._rules.pop(rule_id, None)

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()

    def pick(self, target: str, body: bytes) -> dict | None:
        now = time.monotonic()
        text = body.decode(errors="replace")
        with self._lock:
            self.by_target[target] = self.by_target.get(target, 0) + 1
            for rule_id, rule in list(self._rules.items()):
                if rule["until"] < now:
                    del self._rules[rule_id]
                    continue
                if rule["begins"] > now or not targets(rule.get("target", "*"), target):
                    continue
                wanted = rule.get("match", "")
                wanted = [wanted] if isinstance(wanted, str) else wanted
                if not all(w in text for w in wanted):
                    continue
                if rule["rate"] < 1 and random.random() >= rule["rate"]:
                    continue
                if "times" in rule and self.stats[rule_id] >= int(rule["times"]):
                    continue
                self.stats[rule_id] += 1
                self.by_action[rule["action"]] += 1
                if rule["action"] in ("delay", "lose_answer"):
                    self.stats["forwarded"] += 1
                return rule
            self.stats["forwarded"] += 1
        return None

    def snapshot(self) -> dict:
        with self._lock:
            return dict(self.stats, by_action=dict(self.by_action), by_target=dict(self.by_target))


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
            try:
                if self.command == "POST" and self.path == "/__faults/rules":
                    faults.add(json.loads(body or b"{}"))
                    self._json(200, {"ok": True})
                    return True
                if self.command == "POST" and self.path == "/__faults/profile":
                    faults.load_profile(json.loads(body or b"{}"))
                    self._json(200, {"ok": True})
                    return True
            except (ValueError, KeyError, TypeError) as e:
                self._json(400, {"error": str(e)})
                return True
            if self.command == "DELETE" and self.path == "/__faults/rules":
                faults.clear()
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
            target = (self.headers.get("X-Amz-Target") or "").strip() or untargeted(self.command, self.path)
            rule = faults.pick(target, body)
            action = rule["action"] if rule else None
            if action in ("error", "throttle"):
                throttle = action == "throttle"
                kind = "ThrottlingException" if throttle else "InternalError"
                err = {"__type": kind, "message": f"injected by the fault proxy ({rule['id']})"}
                self._send(
                    400 if throttle else 500,
                    json.dumps(err).encode(),
                    [("Content-Type", "application/x-amz-json-1.0"), ("x-amzn-query-error", f"{kind};Sender")],
                )
                return
            if action == "drop":
                self._hang_up()
                return
            if action == "delay":
                time.sleep(float(rule.get("ms", 300)) / 1000)
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
            if action == "lose_answer":
                self._hang_up()
                return
            out = [(k, v) for k, v in response.getheaders() if k.lower() not in HOP_BY_HOP]
            self._send(response.status, payload, out)

        def _hang_up(self) -> None:
            # The client sees the connection close with no answer, as when a network path
            # or a load balancer drops it.
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = _handle

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=4599)
    parser.add_argument("--upstream", default="http://127.0.0.1:4566")
    parser.add_argument("--profile", help="a fault profile (JSON) to apply from startup")
    args = parser.parse_args()
    faults = Faults()
    if args.profile:
        with open(args.profile) as f:
            faults.load_profile(json.load(f))
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(faults, urllib.parse.urlsplit(args.upstream)))
    server.daemon_threads = True
    print(f"fault proxy on 127.0.0.1:{args.port} -> {args.upstream}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
