"""An agent built with Google's Agent Development Kit and served by its own `to_a2a`,
on a scripted model: a `BaseLlm` of ADK's interface that answers with fixed text, with
no LLM and no network.

    python server.py --port 27144
"""

import argparse

import uvicorn
from google.adk.a2a.utils.agent_to_a2a import to_a2a
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.genai import types


class ScriptedLlm(BaseLlm):
    """Answers every prompt with the same sentence."""

    model: str = "scripted"

    @classmethod
    def supported_models(cls):
        return ["scripted"]

    async def generate_content_async(self, llm_request, stream=False):
        yield LlmResponse(
            content=types.Content(role="model", parts=[types.Part(text="ADK says: the answer is 42.")]),
            turn_complete=True,
        )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    agent = LlmAgent(
        name="adk_scripted_agent",
        description="answers questions",
        instruction="Answer the question.",
        model=ScriptedLlm(),
    )
    app = to_a2a(agent, host="127.0.0.1", port=args.port)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
