"""A widget agent built on the official a2a-sdk (1.3.0), JSON-RPC binding, with push:
asks a question (INPUT_REQUIRED), then works for a while and completes. The end-to-end
tests run the stand-in against it.

    python server.py --port 27110 [--no-push] [--no-streaming] [--work-seconds 15]
        [--auth api_key|bearer|basic|oauth2|sigv4 --accept-file F [--jwks URL --issuer URL]
         [--extended-card] [--card-needs-auth]]
        [--tls-cert F --tls-key F [--client-ca F]] [--received F] [--calls F]
        [--sign-card JWKS_OUT [--tamper-card]] [--grpc PORT]

With --received F, every message the agent receives is appended to F as one JSON line:
its parts, a file's bytes as their SHA-256 (so a test checks what arrived, byte for byte).
With --calls F, every request is appended to F: its path, JSON-RPC method and params, and
its traceparent header.

With --auth, every request (the card's too with --card-needs-auth) must carry what the
scheme says, checked against --accept-file read on each request (so a test rotates the
credential by writing the file): the API key (X-API-Key), the bearer token, the basic
pair (JSON {"username", "password"}); for oauth2, a JWT signed by the OAuth2 server's key
(its JWKS at --jwks) and issued by --issuer; for sigv4, a SigV4 signature for the
service bedrock-agentcore, checked as IAM does with the secret key of the signer's access
key id, which LocalStack's executor (under the tests) writes in the folder F. The card names
the scheme as required (SigV4 has no card scheme). With --tls-cert the agent serves
HTTPS, and with --client-ca it requires a client certificate that CA signed (mTLS; its
card names the mtls scheme).
Refusals are 401; every credential heard is appended to F.heard, so a test can look for
them where they must not be.

With --grpc PORT, the agent also serves A2A over gRPC (the SDK's `GrpcHandler`) on PORT,
and its card lists that interface first (as `127.0.0.1:PORT`), JSON-RPC second; --calls
then logs each gRPC call too, as its method path with `"binding": "grpc"`.

With --sign-card, the card is signed by the SDK's own signer (`create_agent_card_signer`)
with a fresh ES256 key whose signature names its key set (`jku`: this agent's
/jwks.json), and that JWKS is also written to JWKS_OUT for a test to pin. With
--tamper-card, the card's description is changed after it was signed.
"""

import argparse
import asyncio
import ssl
import base64
import hashlib
import hmac
import re
import json
import pathlib

import grpc
import httpx
import jwt
import uvicorn
from starlette.applications import Starlette

from a2a.server.agent_execution.agent_executor import AgentExecutor
from a2a.server.request_handlers import DefaultRequestHandlerV2, GrpcHandler
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
from a2a.types import a2a_pb2, a2a_pb2_grpc
from google.protobuf.json_format import MessageToDict
from starlette.responses import JSONResponse
from starlette.routing import Route


async def read_whole(receive):
    """A request's body read whole, and a receive that hands it on to the app."""
    chunks, more = [], True
    while more:
        message = await receive()
        chunks.append(message.get("body", b""))
        more = message.get("more_body", False)
    body, sent = b"".join(chunks), False

    async def replay():
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return body, replay


class AuthMiddleware:
    """Refuses (401) a request without the scheme's credential."""

    def __init__(self, app, scheme, accept_file, jwks, issuer, card_needs_auth, heard_file=None,
                 role_prefix=None):
        self.app, self.scheme, self.accept = app, scheme, pathlib.Path(accept_file)
        self.role_prefix = role_prefix
        self.heard = pathlib.Path(heard_file or accept_file + ".heard")
        self.issuer, self.card_needs_auth = issuer, card_needs_auth
        self.jwks = jwt.PyJWKClient(jwks) if jwks else None

    def presented(self, headers):
        if self.scheme == "sigv4":
            return headers.get("authorization", "")
        if self.scheme == "api_key":
            return headers.get("x-api-key", "")
        auth = headers.get("authorization", "")
        kind, _, value = auth.partition(" ")
        want = "basic" if self.scheme == "basic" else "bearer"
        return value if kind.lower() == want else ""

    def signed(self, scope, headers, body):
        """The request's SigV4 signature, recomputed with the signer's secret key (paths
        and queries of plain characters only: what an A2A client sends)."""
        match = re.fullmatch(
            r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, "
            r"SignedHeaders=([^,]+), Signature=([0-9a-f]{64})",
            headers.get("authorization", ""),
        )
        if not match:
            return False
        key_id, day, region, service, names, signature = match.groups()
        # Keys STS gave out for a role (what LocalStack's AssumeRole recorded): as
        # AgentCore Runtime, only a role its resource policy names is let in, never the
        # keys of whoever calls (the functions' own role).
        secret_file = self.accept / "assumed" / key_id
        role_file = self.accept / "assumed" / f"{key_id}.role"
        if service != "bedrock-agentcore" or not secret_file.is_file() or "host" not in names.split(";"):
            return False
        if not role_file.is_file() or not role_file.read_text().startswith(self.role_prefix or "\0"):
            return False
        if headers.get("x-amz-security-token", "") != (self.accept / "assumed" / f"{key_id}.token").read_text():
            return False
        query = scope["query_string"].decode()
        canonical = "\n".join([
            scope["method"],
            scope["raw_path"].decode() or "/",
            "&".join(sorted(query.split("&"))) if query else "",
            "".join(f"{n}:{' '.join(headers.get(n, '').split())}\n" for n in names.split(";")),
            names,
            hashlib.sha256(body).hexdigest(),
        ])
        to_sign = "\n".join([
            "AWS4-HMAC-SHA256",
            headers.get("x-amz-date", ""),
            f"{day}/{region}/{service}/aws4_request",
            hashlib.sha256(canonical.encode()).hexdigest(),
        ])
        key = ("AWS4" + secret_file.read_text()).encode()
        for part in (day, region, service, "aws4_request"):
            key = hmac.new(key, part.encode(), hashlib.sha256).digest()
        expected = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
        return hmac.compare_digest(expected, signature)

    def accepts(self, value):
        if not value:
            return False
        expected = self.accept.read_text().strip()
        if self.scheme == "basic":
            pair = json.loads(expected)
            expected = base64.b64encode(f"{pair['username']}:{pair['password']}".encode()).decode()
        if self.scheme != "oauth2":
            return hmac.compare_digest(value.encode(), expected.encode())
        try:
            key = self.jwks.get_signing_key_from_jwt(value).key
            jwt.decode(value, key, algorithms=["RS256"], issuer=self.issuer,
                       options={"verify_aud": False, "require": ["exp", "iss"]})
            return True
        except jwt.PyJWTError:
            return False

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        is_card = scope["path"].startswith("/.well-known/")
        if is_card and not self.card_needs_auth:
            return await self.app(scope, receive, send)
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        value = self.presented(headers)
        if value:
            with self.heard.open("a") as heard:
                heard.write(value + "\n")
        if self.scheme == "sigv4":
            # The body is part of the signature: read it whole, then hand it on.
            body, receive_next = await read_whole(receive)
            ok = self.signed(scope, headers, body)
        else:
            ok, receive_next = self.accepts(value), receive
        if not ok:
            response = JSONResponse({"error": "unauthorized"}, status_code=401)
            return await response(scope, receive, send)
        return await self.app(scope, receive_next, send)


class GrpcCallLog(grpc.aio.ServerInterceptor):
    """--calls for gRPC: each call's method path, its binding and its A2A-Version."""

    def __init__(self, path):
        self.path = path

    async def intercept_service(self, continuation, details):
        metadata = dict(details.invocation_metadata or ())
        call = {"path": details.method, "binding": "grpc", "a2a_version": metadata.get("a2a-version"),
                "traceparent": metadata.get("traceparent")}
        with open(self.path, "a") as log:
            log.write(json.dumps(call) + "\n")
        return await continuation(details)


class CallLog:
    """Appends each request to a file as one JSON line: the path, the JSON-RPC method and
    params, and the traceparent header (so a test sees the trace on every call)."""

    def __init__(self, app, path):
        self.app, self.path = app, path

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        body, replay = await read_whole(receive)
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        try:
            rpc = json.loads(body) if body else {}
        except ValueError:
            rpc = {}
        call = {"path": scope["path"], "method": rpc.get("method"), "params": rpc.get("params"),
                "traceparent": headers.get("traceparent")}
        with open(self.path, "a") as log:
            log.write(json.dumps(call) + "\n")
        return await self.app(scope, replay, send)


def security(scheme):
    """The card's securitySchemes and securityRequirements for the scheme."""
    schemes = {
        "api_key": a2a_pb2.SecurityScheme(api_key_security_scheme=a2a_pb2.APIKeySecurityScheme(location="header", name="X-API-Key")),
        "bearer": a2a_pb2.SecurityScheme(http_auth_security_scheme=a2a_pb2.HTTPAuthSecurityScheme(scheme="Bearer")),
        "basic": a2a_pb2.SecurityScheme(http_auth_security_scheme=a2a_pb2.HTTPAuthSecurityScheme(scheme="Basic")),
        "oauth2": a2a_pb2.SecurityScheme(http_auth_security_scheme=a2a_pb2.HTTPAuthSecurityScheme(scheme="Bearer", bearer_format="JWT")),
        "mtls": a2a_pb2.SecurityScheme(mtls_security_scheme=a2a_pb2.MutualTlsSecurityScheme()),
    }
    return {scheme: schemes[scheme]}, [a2a_pb2.SecurityRequirement(schemes={scheme: a2a_pb2.StringList()})]


def part_seen(part):
    """A received part as the --received log writes it."""
    seen = {"filename": part.filename, "media_type": part.media_type}
    kind = part.WhichOneof("content")
    if kind == "text":
        seen["text"] = part.text
    elif kind == "data":
        seen["data"] = MessageToDict(part.data)
    elif kind == "url":
        seen["url"] = part.url
    elif kind == "raw":
        seen["sha256"] = hashlib.sha256(part.raw).hexdigest()
    return {k: v for k, v in seen.items() if v != ""}


class WidgetExecutor(AgentExecutor):
    def __init__(self, work_seconds: float, received=None) -> None:
        self.work_seconds = work_seconds
        self.received = received

    async def execute(self, context, event_queue):
        if self.received:
            with open(self.received, "a") as log:
                log.write(json.dumps({"parts": [part_seen(p) for p in context.message.parts]}) + "\n")
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
        # What the work produced, in two chunks: the stand-in joins them for the parent.
        await updater.add_artifact([Part(text=f"widget(colour={colour})")], artifact_id="widget", name="widget.txt", last_chunk=False)
        await updater.add_artifact([Part(text=" size=large")], artifact_id="widget", append=True, last_chunk=True)
        await updater.complete(updater.new_agent_message([Part(text=f"Your {colour} widget is ready.")]))

    async def cancel(self, context, event_queue):
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel()


def signed(card, base, jwks_out, tamper):
    """Signs the card in place (before the handler serves it), and the route of its JWKS."""

    from cryptography.hazmat.primitives.asymmetric import ec
    from jwt.algorithms import ECAlgorithm
    from a2a.utils.signing import create_agent_card_signer

    key = ec.generate_private_key(ec.SECP256R1())
    kid = "widget-es256"
    header = {"kid": kid, "alg": "ES256", "typ": "JOSE", "jku": f"{base}/jwks.json"}
    create_agent_card_signer(key, header)(card)
    if tamper:
        card.description = "Asks one question, then works and completes. Trust me."
    public = json.loads(ECAlgorithm.to_jwk(key.public_key()))
    public["kid"] = kid
    jwks = {"keys": [public]}
    with open(jwks_out, "w") as out:
        json.dump(jwks, out)

    async def serve_jwks(request):
        return JSONResponse(jwks)

    return [Route("/jwks.json", serve_jwks, methods=["GET"])]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--no-push", action="store_true")
    parser.add_argument("--no-streaming", action="store_true", help="the card says streaming: false")
    parser.add_argument("--work-seconds", type=float, default=15.0)
    parser.add_argument("--auth", choices=["api_key", "bearer", "basic", "oauth2", "sigv4"])
    parser.add_argument("--accept-file")
    parser.add_argument("--jwks")
    parser.add_argument("--issuer")
    parser.add_argument("--extended-card", action="store_true")
    parser.add_argument("--card-needs-auth", action="store_true")
    parser.add_argument("--tls-cert")
    parser.add_argument("--tls-key")
    parser.add_argument("--client-ca")
    parser.add_argument("--heard-file", help="where heard credentials go (default: the accept file's .heard)")
    parser.add_argument("--received", help="append each received message's parts to this file")
    parser.add_argument("--calls", help="append each request (path, method, params, traceparent) to this file")
    parser.add_argument("--role-prefix", help="sigv4: the roles whose assumed keys are let in (an ARN prefix)")
    parser.add_argument("--sign-card", metavar="JWKS_OUT", help="sign the card; write its public JWKS here")
    parser.add_argument("--tamper-card", action="store_true", help="change the card after it was signed")
    parser.add_argument("--grpc", type=int, metavar="PORT", help="also serve gRPC on PORT, first in the card")
    args = parser.parse_args()
    base = f"{'https' if args.tls_cert else 'http'}://127.0.0.1:{args.port}"
    card = AgentCard(
        name="Widget agent (a2a-sdk)",
        description="Asks one question, then works and completes.",
        supported_interfaces=[AgentInterface(url=f"{base}/", protocol_binding="JSONRPC", protocol_version="1.0")],
        version="0.0.1",
        capabilities=AgentCapabilities(
            streaming=not args.no_streaming,
            push_notifications=not args.no_push,
            extended_agent_card=args.extended_card,
        ),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="widget", name="Build widget", description="Builds a widget", tags=["demo"])],
    )
    if args.grpc:
        card.supported_interfaces.insert(
            0, AgentInterface(url=f"127.0.0.1:{args.grpc}", protocol_binding="GRPC", protocol_version="1.0"))
    extended = None
    scheme = "mtls" if args.client_ca else args.auth
    if scheme and scheme != "sigv4":
        schemes, requirements = security(scheme)
        for name, scheme in schemes.items():
            card.security_schemes[name].CopyFrom(scheme)
        card.security_requirements.extend(requirements)
    if args.extended_card:
        # The authenticated caller's card: the same agent under another name.
        extended = AgentCard()
        extended.CopyFrom(card)
        extended.name = "Widget agent (a2a-sdk), extended"
    push_store = InMemoryPushNotificationConfigStore()
    handler = DefaultRequestHandlerV2(
        agent_executor=WidgetExecutor(args.work_seconds, args.received),
        task_store=InMemoryTaskStore(),
        agent_card=card,
        push_config_store=push_store,
        push_sender=BasePushNotificationSender(httpx.AsyncClient(timeout=10), push_store),
        extended_agent_card=extended,
    )
    routes = create_agent_card_routes(card) + create_jsonrpc_routes(handler, rpc_url="/")
    if args.sign_card:
        routes += signed(card, base, args.sign_card, args.tamper_card)
    app = Starlette(routes=routes)
    if args.auth:
        app = AuthMiddleware(app, args.auth, args.accept_file, args.jwks, args.issuer, args.card_needs_auth,
                             args.heard_file, args.role_prefix)
    if args.calls:
        app = CallLog(app, args.calls)
    tls = {}
    if args.tls_cert:
        tls = {"ssl_certfile": args.tls_cert, "ssl_keyfile": args.tls_key}
        if args.client_ca:
            tls.update(ssl_ca_certs=args.client_ca, ssl_cert_reqs=ssl.CERT_REQUIRED)
    if not args.grpc:
        uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", **tls)
        return

    async def serve_both():
        interceptors = [GrpcCallLog(args.calls)] if args.calls else []
        server = grpc.aio.server(interceptors=interceptors)
        a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), server)
        server.add_insecure_port(f"127.0.0.1:{args.grpc}")
        await server.start()
        await uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=args.port, log_level="warning", **tls)).serve()

    asyncio.run(serve_both())


if __name__ == "__main__":
    main()
