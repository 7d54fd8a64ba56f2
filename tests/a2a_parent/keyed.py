"""A parent that cannot sign: the official a2a-sdk 1.3 client, given a key the operator
issued (`standin keys create`), at the A2A front's keyed door {control URL}/keyed/a2a/{agent}.
It fetches the card with the key, and from then on the SDK's own AuthInterceptor sends the
key for the bearer scheme the card declares: a card that declared none would get the key
sent nowhere, and every call a 401. It delegates, answers the agent's question, reads the
task back, and prints what it saw as one JSON object; the Rust test judges it.
"""

import argparse
import asyncio
import json

import httpx
from google.protobuf.json_format import MessageToDict

from a2a.client import ClientConfig, create_client
from a2a.client.auth import AuthInterceptor, CredentialService
from a2a.types import GetTaskRequest, SendMessageConfiguration, SendMessageRequest

from common import message, said


class TheKey(CredentialService):
    """The key, for whichever scheme the card names (as a parent's secret store would)."""

    def __init__(self, key):
        self.key = key
        self.asked = []

    async def get_credentials(self, security_scheme_name, context):
        self.asked.append(security_scheme_name)
        return self.key


async def send(client, msg):
    request = SendMessageRequest(
        message=msg, configuration=SendMessageConfiguration(return_immediately=False)
    )
    async for event in client.send_message(request):
        return MessageToDict(event.task)
    raise RuntimeError("no answer")


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True, help="the keyed door of one agent")
    parser.add_argument("--key", required=True)
    args = parser.parse_args()
    seen = {}
    card_url = args.url + "/.well-known/agent-card.json"
    async with httpx.AsyncClient(timeout=60) as http:
        bare = await http.get(card_url)
        seen["without_key"] = {"status": bare.status_code,
                               "challenge": bare.headers.get("www-authenticate")}
        with_key = {"headers": {"Authorization": f"Bearer {args.key}"}}
        card = (await http.get(card_url, **with_key)).json()
        seen["card"] = {"url": card["supportedInterfaces"][0]["url"],
                        "schemes": sorted(card.get("securitySchemes", {}))}
        credentials = TheKey(args.key)
        client = await create_client(
            args.url,
            client_config=ClientConfig(streaming=False, httpx_client=http),
            interceptors=[AuthInterceptor(credentials)],
            resolver_http_kwargs=with_key,
        )
        asked = await send(client, message("Please paint the widget"))
        seen["asked"] = {"state": asked["status"]["state"], "text": said(asked)}
        done = await send(client, message("blue", asked["id"]))
        seen["done"] = {"id": done["id"], "state": done["status"]["state"], "text": said(done)}
        got = MessageToDict(await client.get_task(GetTaskRequest(id=asked["id"])))
        seen["got"] = got["status"]["state"]
        seen["schemes_asked"] = sorted(set(credentials.asked))
        await client.close()
    print(json.dumps(seen), flush=True)


asyncio.run(main())
