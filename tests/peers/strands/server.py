"""An agent built with Strands Agents and served by its own `A2AServer` (A2A 0.3, the
framework's default streaming), on a scripted model: a `Model` of Strands' interface
that answers with fixed text, in three deltas, with no LLM and no network.

    python server.py --port 27143
"""

import argparse

from strands import Agent
from strands.models.model import Model
from strands.multiagent.a2a import A2AServer


class ScriptedModel(Model):
    """Answers every prompt with the same three pieces of text."""

    PIECES = ["Looking into it. ", "Drafting the answer. ", "The answer is 42."]

    def __init__(self):
        self.config = {}

    def update_config(self, **model_config):
        self.config.update(model_config)

    def get_config(self):
        return self.config

    async def structured_output(self, output_model, prompt, system_prompt=None, **kwargs):
        raise NotImplementedError("the scripted model answers in text only")
        yield  # an async generator, as the interface has it

    async def stream(self, messages, tool_specs=None, system_prompt=None, **kwargs):
        yield {"messageStart": {"role": "assistant"}}
        yield {"contentBlockStart": {"start": {}}}
        for piece in self.PIECES:
            yield {"contentBlockDelta": {"delta": {"text": piece}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "end_turn"}}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    agent = Agent(
        name="Strands scripted agent",
        description="answers questions",
        model=ScriptedModel(),
        callback_handler=None,
    )
    server = A2AServer(agent=agent, host="127.0.0.1", port=args.port)
    server.serve(host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
