"""Tests of the fault proxy (localstack/fault_proxy.py) against a small upstream server."""

import http.client
import json
import sys
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
import urllib.parse

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import fault_proxy  # noqa: E402


class Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    served: list[str] = []

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        Upstream.served.append(self.headers.get("X-Amz-Target", ""))
        answer = json.dumps({"echo": body.decode()}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


def serve(server):
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class FaultProxyCase(unittest.TestCase):
    def setUp(self):
        Upstream.served = []
        self.upstream = serve(ThreadingHTTPServer(("127.0.0.1", 0), Upstream))
        self.faults = fault_proxy.Faults()
        up = urllib.parse.urlsplit(f"http://127.0.0.1:{self.upstream.server_address[1]}")
        self.proxy = serve(ThreadingHTTPServer(("127.0.0.1", 0), fault_proxy.make_handler(self.faults, up)))

    def tearDown(self):
        for s in (self.proxy, self.upstream):
            s.shutdown()
            s.server_close()

    def call(self, target="DynamoDB_20120810.PutItem", body=b"{}", path="/"):
        conn = http.client.HTTPConnection("127.0.0.1", self.proxy.server_address[1], timeout=5)
        try:
            conn.request("POST", path, body=body, headers={"X-Amz-Target": target})
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()

    def test_forwards_what_no_rule_takes(self):
        self.assertEqual(self.call(body=b"hello")[0], 200)
        self.assertEqual(Upstream.served, ["DynamoDB_20120810.PutItem"])
        self.assertEqual(self.faults.snapshot()["forwarded"], 1)

    def test_counts_calls_by_target_and_names_untargeted_ones_by_method_and_path(self):
        self.call()
        self.call()
        self.call(target="", path="/bucket/key?x=1")
        by_target = self.faults.snapshot()["by_target"]
        self.assertEqual(by_target, {"DynamoDB_20120810.PutItem": 2, "POST /bucket": 1})

    def test_errors_and_throttles_by_service_without_forwarding(self):
        self.faults.add({"id": "e", "target": "DynamoDB_20120810.*", "action": "error"})
        self.faults.add({"id": "t", "target": "AmazonSQS.SendMessage", "action": "throttle"})
        status, body = self.call()
        self.assertEqual(status, 500)
        self.assertIn(b"InternalError", body)
        status, body = self.call(target="AmazonSQS.SendMessage")
        self.assertEqual(status, 400)
        self.assertIn(b"ThrottlingException", body)
        self.assertEqual(self.call(target="AWSStepFunctions.SendTaskSuccess")[0], 200)
        self.assertEqual(Upstream.served, ["AWSStepFunctions.SendTaskSuccess"])
        stats = self.faults.snapshot()
        self.assertEqual((stats["e"], stats["t"]), (1, 1))
        self.assertEqual(stats["by_action"]["error"], 1)

    def test_drop_closes_unanswered_and_lose_answer_serves_first(self):
        self.faults.add({"id": "d", "target": "*", "action": "drop", "match": "drop-me"})
        self.faults.add({"id": "l", "target": "*", "action": "lose_answer", "match": "lose-me"})
        with self.assertRaises((http.client.RemoteDisconnected, ConnectionError)):
            self.call(body=b"drop-me")
        self.assertEqual(Upstream.served, [], "a dropped call is not forwarded")
        with self.assertRaises((http.client.RemoteDisconnected, ConnectionError)):
            self.call(body=b"lose-me")
        self.assertEqual(len(Upstream.served), 1, "a lost answer's call was served")

    def test_times_limits_a_rule(self):
        self.faults.add({"id": "once", "target": "*", "action": "error", "times": 1})
        self.assertEqual([self.call()[0] for _ in range(3)], [500, 200, 200])

    def test_clearing_removes_every_rule(self):
        self.faults.load_profile({"windows": [{"start": 0, "seconds": 60, "rules": [{"target": "*", "action": "error"}]}]})
        self.assertEqual(self.call()[0], 500)
        conn = http.client.HTTPConnection("127.0.0.1", self.proxy.server_address[1], timeout=5)
        conn.request("DELETE", "/__faults/rules")
        self.assertEqual(conn.getresponse().status, 200)
        conn.close()
        self.assertEqual(self.call()[0], 200)

    def test_delay_forwards_late(self):
        self.faults.add({"id": "slow", "target": "*", "action": "delay", "ms": 300})
        began = time.monotonic()
        self.assertEqual(self.call()[0], 200)
        self.assertGreaterEqual(time.monotonic() - began, 0.3)

    def test_a_rate_takes_a_share(self):
        self.faults.add({"id": "half", "target": "*", "action": "error", "rate": 0.5})
        statuses = [self.call()[0] for _ in range(200)]
        self.assertTrue(40 < statuses.count(500) < 160, statuses.count(500))

    def test_profile_windows_open_and_lapse(self):
        self.faults.load_profile({"windows": [{"start": 0.3, "seconds": 0.3, "rules": [{"target": "*", "action": "error"}]}]})
        self.assertEqual(self.call()[0], 200)
        time.sleep(0.35)
        self.assertEqual(self.call()[0], 500)
        time.sleep(0.35)
        self.assertEqual(self.call()[0], 200)
        self.assertEqual(self.faults.snapshot()["w0.0"], 1)

    def test_a_bad_rule_is_refused_with_its_reason(self):
        status, body = self.call(path="/__faults/rules", body=json.dumps({"id": "x", "action": "explode"}).encode())
        self.assertEqual(status, 400)
        self.assertIn(b"action must be one of", body)


if __name__ == "__main__":
    unittest.main()
