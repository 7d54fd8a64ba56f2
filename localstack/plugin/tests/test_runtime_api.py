"""The Runtime API's replies as they leave the socket."""

import socket
import socketserver
import unittest
from unittest import mock

from standin_localstack.runtime_api import PREFIX, Invocation, RuntimeApi, deadline_ms


class RepliesTest(unittest.TestCase):
    def test_an_invocation_is_handed_over_in_one_write_with_nagle_off(self):
        # Written as headers and then a body, Nagle's algorithm held the body until the
        # function's delayed ACK of the headers: invocations started 40 ms late.
        writes, client = [], [None]
        real_write = socketserver._SocketWriter.write

        def recording_write(writer, data):
            # Only this test's connection: the patch is the whole process's.
            if writer._sock.getpeername() == client[0]:
                nodelay = writer._sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
                writes.append((bytes(data), nodelay))
            return real_write(writer, data)

        api = RuntimeApi()
        api.start()
        self.addCleanup(api.stop)
        with mock.patch.object(socketserver._SocketWriter, "write", recording_write):
            host, port = api.address.split(":")
            with socket.create_connection((host, int(port)), timeout=5) as conn:
                client[0] = conn.getsockname()
                conn.sendall(f"GET {PREFIX}/invocation/next HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                self.assertTrue(api.polled.wait(5))
                api.submit(Invocation("req-1", b'{"task_id":"t"}', "arn:fn", "Root=1", deadline_ms(3)))
                reply = b""
                while not reply.endswith(b'{"task_id":"t"}'):
                    chunk = conn.recv(65536)
                    self.assertTrue(chunk, "the connection closed before the whole reply")
                    reply += chunk
        self.assertTrue(reply.startswith(b"HTTP/1.1 200 OK\r\n"))
        self.assertIn(b"Lambda-Runtime-Aws-Request-Id: req-1\r\n", reply)
        self.assertIn(b"Content-Length: 15\r\n\r\n", reply)
        self.assertEqual([data for data, _ in writes], [reply])
        self.assertTrue(all(nodelay for _, nodelay in writes))

    def test_a_result_is_acknowledged_in_one_write(self):
        writes, client = [], [None]
        real_write = socketserver._SocketWriter.write

        def recording_write(writer, data):
            if writer._sock.getpeername() == client[0]:
                writes.append(bytes(data))
            return real_write(writer, data)

        api = RuntimeApi()
        api.start()
        self.addCleanup(api.stop)
        invocation = Invocation("req-2", b"{}", "arn:fn", "Root=1", deadline_ms(3))
        api.submit(invocation)
        with mock.patch.object(socketserver._SocketWriter, "write", recording_write):
            host, port = api.address.split(":")
            with socket.create_connection((host, int(port)), timeout=5) as conn:
                client[0] = conn.getsockname()
                body = b'{"ok":true}'
                conn.sendall(
                    f"POST {PREFIX}/invocation/req-2/response HTTP/1.1\r\nHost: x\r\n"
                    f"Content-Length: {len(body)}\r\n\r\n".encode() + body
                )
                reply = b""
                while not reply.endswith(b'{"status":"OK"}'):
                    chunk = conn.recv(65536)
                    self.assertTrue(chunk, "the connection closed before the whole reply")
                    reply += chunk
        self.assertTrue(invocation.done.is_set())
        self.assertEqual(invocation.result, b'{"ok":true}')
        self.assertTrue(reply.startswith(b"HTTP/1.1 202 Accepted\r\n"))
        self.assertEqual(writes, [reply])


if __name__ == "__main__":
    unittest.main()
