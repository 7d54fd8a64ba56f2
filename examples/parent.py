#!/usr/bin/env python3
"""A parent in Python, with boto3 only: start a stand-in through the control API (signed
with SigV4 by botocore), hear its notes on the parent queue, answer its question, and
at its end save what the sub-task produced (each part's SHA-256 checked).

    python examples/parent.py --stack standin --agent writer \
        --message "Write a haiku about autumn" --answer "Make it about leaves" \
        --file notes.txt --data '{"lines": 3}'

--file (a local file, sent as its bytes when small and put through POST /uploads when not,
or an https:// link the agent fetches) and --data (a JSON object) go with the message as
parts.

Like the `standin` command it finds the stack on LocalStack (http://127.0.0.1:4566, or
--endpoint, or AWS_ENDPOINT_URL) with LocalStack's test credentials; with --aws it uses
AWS, with credentials and region from the usual places. It is meant as the queue's one consumer: a note of another
stand-in is handed back at once, and every hand-back counts toward the queue's receive
limit (5, then the dead-letter queue). A parent that runs many stand-ins reads every note
and dispatches by `task_id`, or routes notes to itself with a rule on the note bus.
Exit status: 0 when the task completed, 1 when it ended otherwise, 2 when the stand-in
could not be started (what is missing is said in one line).
"""

import argparse
import base64
import hashlib
import mimetypes
import json
import os
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import boto3
import botocore.exceptions
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

LOCALSTACK = "http://127.0.0.1:4566"


def session_for(args):
    """AWS as configured with --aws; LocalStack otherwise, as the `standin` command finds it."""
    if args.aws:
        return boto3.session.Session(), None
    endpoint = args.endpoint or os.environ.get("AWS_ENDPOINT_URL") or LOCALSTACK
    session = boto3.session.Session(
        aws_access_key_id=os.environ.get("AWS_ACCESS_KEY_ID", "test"),
        aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY", "test"),
        region_name=os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1",
    )
    return session, endpoint


def cannot_start(args, endpoint, error):
    """The one line that says what is missing, for exit status 2."""
    if isinstance(error, botocore.exceptions.EndpointConnectionError) and endpoint:
        return f"cannot reach LocalStack at {endpoint}: start it with `make up`, or pass --endpoint URL (or --aws)"
    if isinstance(error, botocore.exceptions.NoRegionError):
        return "no AWS region: set AWS_REGION (or a region in your AWS profile)"
    if isinstance(error, botocore.exceptions.NoCredentialsError):
        return "no AWS credentials: set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY"
    if isinstance(error, botocore.exceptions.ClientError) and "does not exist" in str(error):
        place = f"LocalStack at {endpoint}" if endpoint else "AWS"
        return f"no stack {args.stack!r} in {place}: deploy it first (`make up` on LocalStack, `sam deploy` on AWS) or pass --stack NAME"
    return f"the stack could not be read: {error}"


def call(session, method, url, body=None):
    """One control API call, SigV4-signed for execute-api: (status, JSON answer)."""
    data = json.dumps(body).encode() if body is not None else None
    headers = {"content-type": "application/json"} if data else {}
    request = AWSRequest(method=method, url=url, data=data, headers=headers)
    credentials = session.get_credentials().get_frozen_credentials()
    SigV4Auth(credentials, "execute-api", session.region_name).add_auth(request)
    prepared = request.prepare()
    sent = urllib.request.Request(prepared.url, data=data, method=method, headers=dict(prepared.headers))
    try:
        with urllib.request.urlopen(sent, timeout=30) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read() or b"null")


def safe(name):
    """An agent's name as one file name: nothing that could leave the directory."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name).lstrip(".")[:100] or "part"


EXTENSIONS = {"text/plain": "txt", "text/markdown": "md", "text/csv": "csv", "text/html": "html",
              "application/json": "json", "application/xml": "xml", "text/xml": "xml",
              "application/pdf": "pdf", "application/zip": "zip", "image/png": "png",
              "image/jpeg": "jpg", "image/gif": "gif", "image/svg+xml": "svg"}


def with_extension(name, part):
    """An artifact's name, with its part's media type's extension when it has none."""
    if not name or "." in name:
        return name
    media = (part.get("media_type") or "").split(";")[0].strip().lower()
    extension = EXTENSIONS.get(media) or {"text": "txt", "data": "json"}.get(part.get("kind"))
    return f"{name}.{extension}" if extension else name


def save(session, control, task_id, note, into):
    """Every part of the final note's artifacts, read through its link, checked, written."""
    for listed in note.get("artifacts", []):
        artifact_id = listed["artifact_id"]
        path = urllib.parse.quote(artifact_id, safe="")
        status, content = call(session, "GET", f"{control}/standins/{task_id}/artifacts/{path}")
        if status != 200:
            raise RuntimeError(f"artifact {artifact_id!r} did not read ({status}): {content}")
        for index, (part, link) in enumerate(zip(content["artifact"]["parts"], content["links"])):
            if link is None:
                continue  # a URL part (the reference is in the note), or nothing stored
            with urllib.request.urlopen(link, timeout=300) as answer:
                data = answer.read()
            if hashlib.sha256(data).hexdigest() != part.get("sha256"):
                raise RuntimeError(f"part {index} of {artifact_id!r} does not match its SHA-256")
            # The part's file name, else the artifact's (with its media type's extension
            # when it has none), else "part" and its kind's extension: the rule
            # docs/artifacts.md states, as `standin artifacts --out`.
            fallback = {"text": "part.txt", "data": "part.json"}.get(part.get("kind"), "part.bin")
            name = part.get("filename") or with_extension(listed.get("name"), part) or fallback
            folder = safe(artifact_id)
            if folder != artifact_id:  # "a/b" and "a_b" must not share a folder
                folder += "-" + hashlib.sha256(artifact_id.encode()).hexdigest()[:8]
            target = os.path.join(into, folder, f"{index}-{safe(name)}")
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as out:
                out.write(data)
            print(f"saved {target}", flush=True)


def show(note):
    mark = " (final)" if note["final"] else ""
    print(f"seq {note['seq']}  {note['state'].removeprefix('TASK_STATE_')}  {note['text']!r}{mark}", flush=True)


# The most of a file sent inline: base64 grows it by a third, and the turn carries 32 KiB.
INLINE_MOST = 23 * 1024


def uploaded(session, control, content, media_type):
    """A file too large to go inline, put through POST /uploads: its upload_id."""
    status, link = call(session, "POST", f"{control}/uploads", {"size": len(content), "media_type": media_type})
    if status != 200:
        raise ValueError(f"POST /uploads answered {status}: {link}")
    put = urllib.request.Request(link["url"], data=content, method="PUT", headers=link["headers"])
    with urllib.request.urlopen(put, timeout=300):
        return link["upload_id"]


def parts_of(session, control, files, data):
    """--file and --data as the parts a start carries (docs/parents.md): a local file
    inline when small, else through an upload."""
    parts = []
    for file in files:
        if file.startswith("https://"):
            parts.append({"kind": "file", "url": file})
            continue
        with open(file, "rb") as f:
            content = f.read()
        media_type = mimetypes.guess_type(file)[0] or "application/octet-stream"
        part = {"kind": "file", "name": os.path.basename(file), "media_type": media_type}
        if len(content) > INLINE_MOST:
            part["upload_id"] = uploaded(session, control, content, media_type)
        else:
            part["bytes"] = base64.b64encode(content).decode()
        parts.append(part)
    for text in data:
        parts.append({"kind": "data", "data": json.loads(text)})
    return parts


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", default="standin")
    parser.add_argument("--agent", required=True)
    parser.add_argument("--message", required=True)
    parser.add_argument("--answer", default="yes", help="the reply to any question the agent asks")
    parser.add_argument("--file", action="append", default=[], help="a file for the agent: a local path (inline when small, else uploaded) or an https:// link")
    parser.add_argument("--data", action="append", default=[], help="data for the agent: a JSON object")
    parser.add_argument("--task-id", help="the stand-in's id (the API makes one up without it)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds to wait for the end")
    parser.add_argument("--save", default="artifacts", help="where the sub-task's artifacts go")
    parser.add_argument("--aws", action="store_true", help="use AWS instead of LocalStack")
    parser.add_argument("--endpoint", help=f"LocalStack's URL (default: AWS_ENDPOINT_URL, or {LOCALSTACK})")
    args = parser.parse_args()

    session, endpoint = session_for(args)
    try:
        described = session.client("cloudformation", endpoint_url=endpoint).describe_stacks(StackName=args.stack)
    except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as error:
        print(f"parent.py: {cannot_start(args, endpoint, error)}", file=sys.stderr)
        return 2
    outputs = {o["OutputKey"]: o["OutputValue"] for o in described["Stacks"][0].get("Outputs", [])}
    missing = [key for key in ("ControlApiUrl", "ParentQueueUrl") if key not in outputs]
    if missing:
        print(f"parent.py: stack {args.stack!r} has no output {missing[0]}: is it a stand-in stack?", file=sys.stderr)
        return 2
    control, queue = outputs["ControlApiUrl"].rstrip("/"), outputs["ParentQueueUrl"]
    sqs = session.client("sqs", endpoint_url=endpoint)

    start = {"agent": args.agent, "message": args.message}
    try:
        parts = parts_of(session, control, args.file, args.data)
    except (OSError, ValueError) as error:
        print(f"parent.py: --file/--data: {error}", file=sys.stderr)
        return 2
    if parts:
        start["parts"] = parts
    if args.task_id:
        start["task_id"] = args.task_id
    try:
        status, started = call(session, "POST", f"{control}/standins", start)
    except urllib.error.URLError as error:
        print(f"parent.py: the control API at {control} did not answer: {error.reason}", file=sys.stderr)
        return 2
    if status != 200:
        print(f"parent.py: the stand-in was not started ({status}): {started}", file=sys.stderr)
        return 2
    task_id = started["task_id"]
    print(f"started stand-in {task_id}", flush=True)

    handled = 0  # the last note handled: notes arrive in order, at least once
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        got = sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=10, MaxNumberOfMessages=10)
        for message in got.get("Messages", []):
            note = json.loads(message["Body"])
            if note.get("task_id") != task_id:
                # Another stand-in's note: hand it back for its own parent.
                sqs.change_message_visibility(
                    QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
                )
                continue
            notes = [note]
            if note["seq"] > handled + 1:
                # A gap: a note went to the dead-letter queue; the note log has it.
                status, page = call(session, "GET", f"{control}/standins/{task_id}/notes?after={handled}")
                if status != 200:
                    print(f"the note log did not answer ({status}): {page}", file=sys.stderr)
                    return 1
                notes = page["notes"]
            for note in notes:
                if note["seq"] <= handled:
                    continue  # delivered twice
                handled = note["seq"]
                show(note)
                if note["final"]:
                    sqs.delete_message(QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"])
                    save(session, control, task_id, note, os.path.join(args.save, task_id))
                    return 0 if note["state"] == "TASK_STATE_COMPLETED" else 1
                if note["state"] == "TASK_STATE_INPUT_REQUIRED":
                    print(f"replying {args.answer!r}", flush=True)
                    # Named by the question's number, so a retried reply is taken once.
                    reply = {"text": args.answer, "reply_id": f"answer-{note['seq']}"}
                    call(session, "POST", f"{control}/standins/{task_id}/reply", reply)
            sqs.delete_message(QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"])
    print(f"no end within {args.timeout} s", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
