"""A parent with no code of its own: the official MCP Python SDK's client drives
Stand-in's MCP tools through a whole conversation, as an LLM orchestrator's tool calls
would: list the tools and the agents, delegate with a file and data, wait for the
question, reply with data, wait for the end, read the artifacts, and ask for something
that is refused. Over stdio (`standin mcp`) or over Streamable HTTP (the control API's
`/mcp`). It prints one JSON object of what it saw; cli/tests/mcp.rs judges it.

    python conversation.py --standin BIN --stack standin --agent mcp --file PATH
    python conversation.py --url CONTROL_API/mcp --agent mcp-http --file PATH
"""

import argparse
import asyncio
import base64
import contextlib
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


@contextlib.asynccontextmanager
async def transport(args):
    """The client's streams: to the control API's /mcp, or to `standin mcp`'s stdio."""
    if args.url:
        async with streamable_http_client(args.url) as (read, write):
            yield read, write
        return
    server = StdioServerParameters(
        command=args.standin,
        args=["--stack", args.stack, "mcp"],
        # What the command reads to find the stack, and nothing else of this process's.
        env={k: v for k, v in os.environ.items()
             if k in ("PATH", "HOME", "AWS_ENDPOINT_URL", "STANDIN_ENDPOINT", "STANDIN_STACK")},
    )
    async with stdio_client(server) as (read, write):
        yield read, write


async def conversation(args):
    seen = {}
    async with transport(args) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()

            async def call(name, arguments):
                result = await session.call_tool(name, arguments)
                if result.is_error:
                    raise RuntimeError(f"{name}: {result.content[0].text}")
                return result.structured_content

            async def wait_for(task_id, after, final):
                """Waits until a note of that finality arrives; returns the notes and after_seq."""
                notes = []
                for _ in range(20):
                    waited = await call("wait", {"task_id": task_id, "after_seq": after, "timeout_secs": 10})
                    notes += waited["notes"]
                    after = waited["after_seq"]
                    if any(n["final"] == final and n["state"] != "TASK_STATE_WORKING" for n in waited["notes"]):
                        return notes, after
                raise RuntimeError(f"no {'final' if final else 'question'} note: {notes}")

            tools = (await session.list_tools()).tools
            seen["tools"] = sorted(tool.name for tool in tools)
            seen["every_tool_has_an_output_schema"] = all(tool.output_schema for tool in tools)
            agents = (await call("list_agents", {}))["agents"]
            seen["agents"] = [agent["id"] for agent in agents]
            seen["listed"] = next((a for a in agents if a["id"] == args.agent), None)

            with open(args.file, "rb") as f:
                sketch = base64.b64encode(f.read()).decode()
            started = await call("delegate", {
                "agent": args.agent,
                "message": "Please paint the widget",
                "data": {"size": "large"},
                "files": [{"name": "sketch.txt", "media_type": "text/plain", "bytes": sketch}],
            })
            task_id = seen["task_id"] = started["task_id"]
            notes, after = await wait_for(task_id, 0, final=False)
            seen["question"] = notes[-1]
            await call("reply", {"task_id": task_id, "text": "blue", "data": {"shade": "navy"}})
            notes, after = await wait_for(task_id, after, final=True)
            seen["end"] = notes[-1]
            seen["status"] = await call("status", {"task_id": task_id})
            listed = await call("artifacts", {"task_id": task_id})
            seen["artifacts"] = listed["artifacts"]
            first = listed["artifacts"][0]["artifact_id"]
            seen["artifact"] = await call("artifacts", {"task_id": task_id, "artifact_id": first})

            refused = await session.call_tool("reply", {"task_id": "si-nobody-here", "text": "hello"})
            seen["refused"] = {"is_error": refused.is_error, "text": refused.content[0].text}
    return seen


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--standin", help="the standin command, served over stdio")
    parser.add_argument("--url", help="the control API's /mcp, over Streamable HTTP")
    parser.add_argument("--stack", default="standin")
    parser.add_argument("--agent", required=True)
    parser.add_argument("--file", required=True)
    args = parser.parse_args()
    if not (args.url or args.standin):
        parser.error("give --standin or --url")
    seen = asyncio.run(conversation(args))
    json.dump(seen, sys.stdout)
    print()


if __name__ == "__main__":
    main()
