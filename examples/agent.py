"""A minimal A2A agent to start your own from: the official a2a-sdk (1.x), JSON-RPC, with
streaming and push. It asks whom to greet, tells its progress as it works, and answers.

    python examples/agent.py --port 27190

A stand-in reaches it once it is an agent of the stack (docs/own-agent.md walks through
it). Replace Greeter.execute with your agent's work; the rest is what every a2a-sdk 1.x
agent needs.
"""

import argparse
import asyncio

import httpx
import uvicorn
from a2a.helpers.proto_helpers import new_task
from a2a.server.agent_execution.agent_executor import AgentExecutor
from a2a.server.request_handlers import DefaultRequestHandlerV2
from a2a.server.routes.agent_card_routes import create_agent_card_routes
from a2a.server.routes.jsonrpc_routes import create_jsonrpc_routes
from a2a.server.tasks.base_push_notification_sender import BasePushNotificationSender
from a2a.server.tasks.inmemory_push_notification_config_store import InMemoryPushNotificationConfigStore
from a2a.server.tasks.inmemory_task_store import InMemoryTaskStore
from a2a.server.tasks.task_updater import TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Part, TaskState
from starlette.applications import Starlette


class Greeter(AgentExecutor):
    async def execute(self, context, event_queue):
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        said = (context.get_user_input() or "").strip()
        if context.current_task is None:
            # The first turn publishes its Task before any status update.
            await event_queue.enqueue_event(new_task(
                context.task_id, context.context_id, TaskState.TASK_STATE_SUBMITTED, history=[context.message]))
            name = said[len("greet "):].strip() if said.lower().startswith("greet ") else ""
            if not name:  # "Greet Ada" says whom; anything else is asked about
                await updater.requires_input(updater.new_agent_message([Part(text="Whom should I greet?")]))
                return
        else:
            name = said or "world"
        for step in (f"Looking {name} up...", "Choosing the words...", "Writing the greeting..."):
            await updater.start_work(updater.new_agent_message([Part(text=step)]))
            await asyncio.sleep(1)  # the work; each step reaches the parent as it happens
        # last_chunk: the artifact is whole, so it reaches the parent now, not only at the end.
        await updater.add_artifact([Part(text=f"Hello, {name}!")], name="greeting.txt", last_chunk=True)
        await asyncio.sleep(1)
        await updater.complete(updater.new_agent_message([Part(text=f"Greeted {name}.")]))

    async def cancel(self, context, event_queue):
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=27190)
    port = parser.parse_args().port
    card = AgentCard(
        name="Greeter", description="Asks whom to greet, then greets them.", version="1.0.0",
        # The card says where the agent answers: a stand-in reads this, not the card's URL.
        supported_interfaces=[AgentInterface(
            url=f"http://127.0.0.1:{port}/", protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=True, push_notifications=True),
        default_input_modes=["text/plain"], default_output_modes=["text/plain"],
        skills=[AgentSkill(id="greet", name="Greet", description="Greets someone", tags=["example"])],
    )
    pushes = InMemoryPushNotificationConfigStore()
    handler = DefaultRequestHandlerV2(
        agent_executor=Greeter(), task_store=InMemoryTaskStore(), agent_card=card, push_config_store=pushes,
        push_sender=BasePushNotificationSender(httpx.AsyncClient(timeout=10), pushes))
    app = Starlette(routes=create_agent_card_routes(card) + create_jsonrpc_routes(handler, rpc_url="/"))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
