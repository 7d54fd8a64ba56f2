"""A widget agent built on the official a2a-sdk (1.3.0), JSON-RPC binding, with push:
asks a question (INPUT_REQUIRED), then works for a while and completes. The end-to-end
tests run the stand-in against it.

    python server.py --port 27110 [--no-push] [--no-streaming] [--work-seconds 15]
"""

import argparse
import asyncio

import httpx
import uvicorn
from starlette.applications import Starlette

from a2a.server.agent_execution.agent_executor import AgentExecutor
from a2a.server.request_handlers import DefaultRequestHandlerV2
from a2a.server.routes.agent_card_routes import create_agent_card_routes
from a2a.server.routes.jsonrpc_routes import create_jsonrpc_routes
from a2a.server.tasks.base_push_notification_sender import BasePushNotificationSender
from a2a.server.tasks.inmemory_push_notification_config_store import (
    InMemoryPushNotificationConfigStore,
)
from a2a.server.tasks.inmemory_task_store import InMemoryTaskStore
from a2a.server.tasks.task_updater import TaskUpdater
from a2a.helpers.proto_helpers import new_task
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Part, TaskState


class WidgetExecutor(AgentExecutor):
    def __init__(self, work_seconds: float) -> None:
        self.work_seconds = work_seconds

    async def execute(self, context, event_queue):
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        if context.current_task is None:
            # A first turn must publish its Task before any status update.
            await event_queue.enqueue_event(
                new_task(context.task_id, context.context_id, TaskState.TASK_STATE_SUBMITTED, history=[context.message])
            )
            await updater.requires_input(updater.new_agent_message([Part(text="What colour should the widget be?")]))
            return
        colour = context.get_user_input() or "plain"
        await updater.start_work(updater.new_agent_message([Part(text=f"Building a {colour} widget...")]))
        await asyncio.sleep(self.work_seconds)
        await updater.complete(updater.new_agent_message([Part(text=f"Your {colour} widget is ready.")]))

    async def cancel(self, context, event_queue):
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--no-push", action="store_true")
    parser.add_argument("--no-streaming", action="store_true", help="the card says streaming: false")
    parser.add_argument("--work-seconds", type=float, default=15.0)
    args = parser.parse_args()
    base = f"http://127.0.0.1:{args.port}"
    card = AgentCard(
        name="Widget agent (a2a-sdk)",
        description="Asks one question, then works and completes.",
        supported_interfaces=[AgentInterface(url=f"{base}/", protocol_binding="JSONRPC", protocol_version="1.0")],
        version="0.0.1",
        capabilities=AgentCapabilities(streaming=not args.no_streaming, push_notifications=not args.no_push),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="widget", name="Build widget", description="Builds a widget", tags=["demo"])],
    )
    push_store = InMemoryPushNotificationConfigStore()
    handler = DefaultRequestHandlerV2(
        agent_executor=WidgetExecutor(args.work_seconds),
        task_store=InMemoryTaskStore(),
        agent_card=card,
        push_config_store=push_store,
        push_sender=BasePushNotificationSender(httpx.AsyncClient(timeout=10), push_store),
    )
    routes = create_agent_card_routes(card) + create_jsonrpc_routes(handler, rpc_url="/")
    uvicorn.run(Starlette(routes=routes), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
