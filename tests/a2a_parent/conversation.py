"""A parent that speaks only A2A: the official a2a-sdk 1.3 client, through Stand-in's A2A
front at {control URL}/a2a/{agent}. It reads the front's card, delegates, answers the
agent's question, reads the task back (GetTask, ListTasks), then starts a second task and
cancels it. It prints what it saw as one JSON object; the Rust test judges it.

On AWS the control API takes SigV4: give the client an httpx.Auth that signs each request
(docs/a2a-front.md). LocalStack does not check signatures, so this script sends none.
"""

import argparse
import asyncio
import json

import httpx
from google.protobuf.json_format import MessageToDict

from a2a.client import ClientConfig, create_client
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    SendMessageConfiguration,
    SendMessageRequest,
)

from common import message, said



async def send(client, msg, return_immediately=False):
    request = SendMessageRequest(
        message=msg,
        configuration=SendMessageConfiguration(return_immediately=return_immediately),
    )
    async for event in client.send_message(request):
        return MessageToDict(event.task)
    raise RuntimeError("no answer")



async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True, help="the front of one agent: .../a2a/{agent}")
    args = parser.parse_args()
    seen = {}
    async with httpx.AsyncClient(timeout=60) as http:
        client = await create_client(
            args.url, client_config=ClientConfig(streaming=False, httpx_client=http)
        )
        card = (await http.get(args.url + "/.well-known/agent-card.json")).json()
        seen["card"] = {"name": card["name"], "skills": [s["id"] for s in card["skills"]],
                        "streaming": card["capabilities"].get("streaming")}

        asked = await send(client, message("Please paint the widget"))
        task_id = asked["id"]
        seen["asked"] = {"state": asked["status"]["state"], "text": said(asked)}
        done = await send(client, message("blue", task_id))
        seen["done"] = {"id": done["id"], "state": done["status"]["state"], "text": said(done),
                        "artifacts": [a.get("name") for a in done.get("artifacts", [])]}
        got = MessageToDict(await client.get_task(GetTaskRequest(id=task_id)))
        seen["got"] = {"state": got["status"]["state"],
                       "history": [[m.get("role"), said({"status": {"message": m}})]
                                   for m in got.get("history", [])],
                       "artifact_text": [p.get("text") for a in got.get("artifacts", [])
                                         for p in a.get("parts", [])]}
        # Every page: the front pages the stand-ins as the control API does.
        seen["listed"], token = [], ""
        for _ in range(500):
            page = MessageToDict(await client.list_tasks(ListTasksRequest(page_token=token)))
            seen["listed"] += [t["id"] for t in page.get("tasks", [])]
            token = page.get("nextPageToken", "")
            if not token:
                break

        second = await send(client, message("Paint another"), return_immediately=True)
        seen["second_at_once"] = second["status"]["state"]
        # Cancel once the agent has it (its question asked).
        for _ in range(100):
            now = MessageToDict(await client.get_task(GetTaskRequest(id=second["id"])))
            if now["status"]["state"] == "TASK_STATE_INPUT_REQUIRED":
                break
            await asyncio.sleep(0.3)
        canceled = MessageToDict(await client.cancel_task(CancelTaskRequest(id=second["id"])))
        seen["canceled"] = canceled["status"]["state"]

        try:
            await client.get_task(GetTaskRequest(id="si-no-such-task"))
            seen["unknown"] = "found"
        except Exception as err:  # the SDK's TaskNotFoundError
            seen["unknown"] = type(err).__name__
        await client.close()
    print(json.dumps(seen))


asyncio.run(main())
