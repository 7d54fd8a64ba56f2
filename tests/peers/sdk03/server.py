"""A widget agent on the official a2a-sdk 0.3 (0.3.26), as LangGraph, CrewAI and older
deployments still serve A2A: asks a question (input-required), works a while, adds an
artifact, completes. Push by the SDK's own sender. The end-to-end tests run the stand-in
against it over JSON-RPC and (with --rest) over 0.3's HTTP+JSON.

    python server.py --port 27141 [--rest] [--work-seconds 3] [--received F]

With --received F, every message the agent receives is appended to F as one JSON line:
its parts, a file's bytes as their SHA-256.
"""

import argparse
import asyncio
import base64
import hashlib
import json

import httpx
import uvicorn

from a2a.server.agent_execution import AgentExecutor
from a2a.server.apps import A2ARESTFastAPIApplication, A2AStarletteApplication
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import (
    BasePushNotificationSender,
    InMemoryPushNotificationConfigStore,
    InMemoryTaskStore,
    TaskUpdater,
)
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentSkill,
    DataPart,
    FilePart,
    FileWithBytes,
    Part,
    TextPart,
)
from a2a.utils import new_task


def part_seen(part):
    """A received part as the --received log writes it (the 1.0 agent's names)."""
    root = part.root
    if isinstance(root, TextPart):
        return {"text": root.text}
    if isinstance(root, DataPart):
        return {"data": root.data}
    if isinstance(root, FilePart):
        seen = {"filename": root.file.name, "media_type": root.file.mime_type}
        if isinstance(root.file, FileWithBytes):
            seen["sha256"] = hashlib.sha256(base64.b64decode(root.file.bytes)).hexdigest()
        else:
            seen["url"] = root.file.uri
        return {k: v for k, v in seen.items() if v}
    return {"unknown": str(root)}


class WidgetExecutor(AgentExecutor):
    def __init__(self, work_seconds: float, received=None) -> None:
        self.work_seconds = work_seconds
        self.received = received

    async def execute(self, context, event_queue):
        if self.received:
            with open(self.received, "a") as log:
                log.write(json.dumps({"parts": [part_seen(p) for p in context.message.parts]}) + "\n")
        task = context.current_task
        if task is None:
            task = new_task(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if len(task.history or []) <= 1:
            await updater.requires_input(
                updater.new_agent_message([Part(root=TextPart(text="Which colour should the widget be?"))]),
                final=True,
            )
            return
        colour = context.get_user_input() or "plain"
        await updater.start_work(updater.new_agent_message([Part(root=TextPart(text=f"Building a {colour} widget..."))]))
        await asyncio.sleep(self.work_seconds)
        await updater.add_artifact([Part(root=TextPart(text=f"widget(colour={colour})"))], name="widget")
        await updater.complete(updater.new_agent_message([Part(root=TextPart(text=f"Your {colour} widget is ready."))]))

    async def cancel(self, context, event_queue):
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--rest", action="store_true", help="serve 0.3's HTTP+JSON binding")
    parser.add_argument("--work-seconds", type=float, default=3.0)
    parser.add_argument("--received", help="append each received message's parts to this file")
    args = parser.parse_args()
    base = f"http://127.0.0.1:{args.port}"
    card = AgentCard(
        name="Widget agent (a2a-sdk 0.3)",
        description="Asks one question, then works and completes.",
        url=f"{base}/",
        preferred_transport="HTTP+JSON" if args.rest else "JSONRPC",
        protocol_version="0.3.0",
        version="0.0.1",
        capabilities=AgentCapabilities(streaming=True, push_notifications=True),
        default_input_modes=["text"],
        default_output_modes=["text"],
        skills=[AgentSkill(id="widget", name="Build widget", description="Builds a widget", tags=["demo"])],
    )
    push_store = InMemoryPushNotificationConfigStore()
    handler = DefaultRequestHandler(
        agent_executor=WidgetExecutor(args.work_seconds, args.received),
        task_store=InMemoryTaskStore(),
        push_config_store=push_store,
        push_sender=BasePushNotificationSender(httpx.AsyncClient(timeout=10), push_store),
    )
    if args.rest:
        app = A2ARESTFastAPIApplication(agent_card=card, http_handler=handler).build()
    else:
        app = A2AStarletteApplication(agent_card=card, http_handler=handler).build()
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
