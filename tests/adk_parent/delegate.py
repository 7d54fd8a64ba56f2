"""A parent built with Google's Agent Development Kit: its own remote-agent tool,
`RemoteA2aAgent`, run by ADK's `InMemoryRunner`, delegates through Stand-in's A2A front
({control URL}/a2a/{agent}) to a real agent. Two turns in one ADK session: the request,
then the answer to the agent's question, which ADK sends as the same task (it resumes an
INPUT_REQUIRED task by itself). It prints what each turn heard, and the task's id, as one
JSON object; the Rust test judges it and follows the stand-in to its end.

On AWS the control API takes SigV4: give RemoteA2aAgent an httpx client that signs
(docs/a2a-front.md). LocalStack does not check signatures.
"""

import argparse
import asyncio
import json

from google.adk.agents.remote_a2a_agent import A2A_METADATA_PREFIX, RemoteA2aAgent
from google.adk.runners import InMemoryRunner
from google.genai import types


async def turn(runner, session_id, text):
    """What the turn heard: the task's state and its status message as ADK recorded the
    answer (ADK turns a question into a function call of its own, not text), the text
    ADK made of it, and the task's id."""
    heard, state, said, task_id = [], None, None, None
    message = types.Content(role="user", parts=[types.Part(text=text)])
    async for event in runner.run_async(user_id="parent", session_id=session_id, new_message=message):
        if event.error_message:
            raise RuntimeError(f"{event.error_code}: {event.error_message}")
        for part in (event.content.parts if event.content else None) or []:
            if part.text:
                heard.append(part.text)
        metadata = event.custom_metadata or {}
        task_id = metadata.get(A2A_METADATA_PREFIX + "task_id", task_id)
        response = metadata.get(A2A_METADATA_PREFIX + "response")
        status = response.get("status") if isinstance(response, dict) else None
        if isinstance(status, dict):
            state = status.get("state", state)
            parts = (status.get("message") or {}).get("parts") or []
            said = " ".join(p.get("text", "") for p in parts) or said
    return {"state": state, "said": said, "heard": " ".join(heard)}, task_id


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True, help="the front of one agent: .../a2a/{agent}")
    args = parser.parse_args()
    remote = RemoteA2aAgent(
        name="widget_builder",
        agent_card=args.url + "/.well-known/agent-card.json",
        timeout=60,
    )
    runner = InMemoryRunner(agent=remote, app_name="adk-parent")
    session = await runner.session_service.create_session(app_name="adk-parent", user_id="parent")
    asked, task_id = await turn(runner, session.id, "Please build me a widget")
    answered, same_task = await turn(runner, session.id, "blue")
    print(json.dumps({"asked": asked, "task_id": task_id, "answered": answered,
                      "same_task": same_task}))


asyncio.run(main())
