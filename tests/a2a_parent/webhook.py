"""A parent that hears its task by webhook: the official a2a-sdk 1.3 client starts a task
through Stand-in's A2A front with a push notification config (its own webhook, served
here on loopback, and a token), answers the agent's question, and reads the configs back.
A second webhook (on a server of its own) is set through the control API with `after: 0`,
so it gets the notes written before it too. The first webhook is down for a minute while the task ends: every
note must arrive afterwards, in order. It prints what it saw as one JSON object; the Rust
test judges it.
"""

import argparse
import asyncio
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
from google.protobuf.json_format import MessageToDict

from a2a.client import ClientConfig, create_client
from a2a.types import (
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    SendMessageConfiguration,
    SendMessageRequest,
    TaskPushNotificationConfig,
)

from common import message

RECEIVED = []
LOCK = threading.Lock()


class Webhook(BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        kind = next(iter(body))
        event = body[kind]
        with LOCK:
            RECEIVED.append({
                "path": self.path,
                "token": self.headers.get("X-A2A-Notification-Token"),
                "authorization": self.headers.get("Authorization"),
                "kind": kind,
                "state": event.get("status", {}).get("state"),
                "seq": event.get("metadata", {}).get("seq"),
                "artifact": event.get("artifact", {}).get("name"),
                "at": time.monotonic(),
            })
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def serve(port):
    server = ThreadingHTTPServer(("127.0.0.1", port), Webhook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def heard(path, state):
    with LOCK:
        return any(r["path"] == path and r["state"] == state for r in RECEIVED)


async def until(check, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        await asyncio.sleep(0.25)
    return False



async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True, help="the front of one agent: .../a2a/{agent}")
    parser.add_argument("--control", required=True, help="the control API's base URL")
    parser.add_argument("--port", type=int, required=True, help="the webhook's port")
    parser.add_argument("--audit-port", type=int, required=True,
                        help="the second webhook's port (it stays up)")
    parser.add_argument("--down-secs", type=float, default=60)
    args = parser.parse_args()
    hook = f"http://127.0.0.1:{args.port}"
    token = f"parent-token-{uuid.uuid4()}"
    seen = {"token": token}
    server = serve(args.port)
    audit = serve(args.audit_port)
    async with httpx.AsyncClient(timeout=60) as http:
        client = await create_client(
            args.url, client_config=ClientConfig(streaming=False, httpx_client=http)
        )
        request = SendMessageRequest(
            message=message("Please paint the widget"),
            configuration=SendMessageConfiguration(
                task_push_notification_config=TaskPushNotificationConfig(
                    url=hook + "/main", token=token
                )
            ),
        )
        async for event in client.send_message(request):
            asked = MessageToDict(event.task)
            break
        task_id = asked["id"]
        seen["task_id"] = task_id
        seen["heard_question"] = await until(lambda: heard("/main", "TASK_STATE_INPUT_REQUIRED"), 60)
        # A second webhook, through the control API, for every note from the first.
        put = await http.put(f"{args.control}/standins/{task_id}/webhooks/audit",
                             json={"url": f"http://127.0.0.1:{args.audit_port}/audit", "after": 0,
                                   "authorization": "Bearer audit-secret"})
        seen["audit_set"] = {"status": put.status_code, "body": put.json()}
        listed = MessageToDict(await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=task_id)))
        seen["configs"] = sorted(c["id"] for c in listed.get("configs", []))
        got = MessageToDict(await client.get_task_push_notification_config(
            GetTaskPushNotificationConfigRequest(task_id=task_id, id=task_id)))
        seen["config"] = {"url": got.get("url"), "token_shown": "token" in got}

        # The main webhook goes down for a while; the task ends meanwhile.
        server.shutdown()
        server.server_close()
        down_at = time.monotonic()
        async for event in client.send_message(SendMessageRequest(message=message("blue", task_id))):
            seen["answered"] = MessageToDict(event.task)["status"]["state"]
            break
        seen["audit_heard_end"] = await until(lambda: heard("/audit", "TASK_STATE_COMPLETED"), 60)
        await asyncio.sleep(max(0, args.down_secs - (time.monotonic() - down_at)))
        server = serve(args.port)
        up_at = time.monotonic()
        seen["main_heard_end"] = await until(lambda: heard("/main", "TASK_STATE_COMPLETED"), 120)
        seen["after_up_secs"] = round(time.monotonic() - up_at, 1)

        await client.delete_task_push_notification_config(
            DeleteTaskPushNotificationConfigRequest(task_id=task_id, id="audit"))
        listed = MessageToDict(await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=task_id)))
        seen["configs_after_delete"] = sorted(c["id"] for c in listed.get("configs", []))
        await client.close()
    server.shutdown()
    audit.shutdown()
    with LOCK:
        seen["received"] = [dict(r, at=None) for r in RECEIVED]
    print(json.dumps(seen))


asyncio.run(main())
