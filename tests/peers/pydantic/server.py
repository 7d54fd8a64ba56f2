"""An agent built with Pydantic AI and served by FastA2A (`agent_to_a2a`, A2A 1.0 over
JSON-RPC), on a scripted model: Pydantic AI's own `FunctionModel`, which answers every
prompt with fixed text (in three pieces when streamed), with no LLM and no network.

    python server.py --port 27148
"""

import argparse

import uvicorn
from fasta2a.pydantic_ai import agent_to_a2a
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

PIECES = ["Pydantic AI says: ", "the answer ", "is 42."]
ANSWER = "".join(PIECES)


def answer(messages, info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart(ANSWER)])


async def stream_answer(messages, info: AgentInfo):
    for piece in PIECES:
        yield piece


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    agent = Agent(FunctionModel(answer, stream_function=stream_answer), name="Pydantic AI scripted agent")
    app = agent_to_a2a(
        agent, url=f"http://127.0.0.1:{args.port}/", description="answers questions"
    )
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
