"""A parent that dies mid-task and a new one that carries on: with --start, the official
a2a-sdk 1.3 client starts a task through Stand-in's A2A front, prints its id and waits to
be killed; with --resume ID, a new process reads the task (GetTask) until it asks,
answers it as the same task and prints what it saw as one JSON object.
"""

import argparse
import asyncio
import json
import sys

import httpx
from google.protobuf.json_format import MessageToDict

from a2a.client import ClientConfig, create_client
from a2a.types import (
    GetTaskRequest,
    SendMessageConfiguration,
    SendMessageRequest,
)

from common import message, said




async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True, help="the front of one agent: .../a2a/{agent}")
    parser.add_argument("--start", action="store_true")
    parser.add_argument("--resume", help="the task to carry on")
    args = parser.parse_args()
    async with httpx.AsyncClient(timeout=60) as http:
        client = await create_client(
            args.url, client_config=ClientConfig(streaming=False, httpx_client=http)
        )
        if args.start:
            request = SendMessageRequest(
                message=message("Please paint the widget"),
                configuration=SendMessageConfiguration(return_immediately=True),
            )
            async for event in client.send_message(request):
                print(json.dumps({"task_id": event.task.id}), flush=True)
                break
            await asyncio.sleep(600)  # killed here
            sys.exit(1)
        seen = {}
        for _ in range(200):
            task = MessageToDict(await client.get_task(GetTaskRequest(id=args.resume)))
            if task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED":
                break
            await asyncio.sleep(0.3)
        seen["found"] = {"state": task["status"]["state"], "text": said(task)}
        request = SendMessageRequest(message=message("blue", args.resume))
        async for event in client.send_message(request):
            done = MessageToDict(event.task)
            seen["done"] = {"id": done["id"], "state": done["status"]["state"],
                            "text": said(done)}
            break
        await client.close()
    print(json.dumps(seen))


asyncio.run(main())
