"""A Lambda function in a few lines: the Runtime API loop, steered by the payload."""

import json
import os
import sys
import time
import urllib.request

api = f"http://{os.environ['AWS_LAMBDA_RUNTIME_API']}/2018-06-01/runtime"
if os.environ.get("FAIL_AT_INIT"):
    print("init failing on purpose", flush=True)
    sys.exit(3)
print(f"cold start pid={os.getpid()}", flush=True)

while True:
    with urllib.request.urlopen(f"{api}/invocation/next") as r:
        request_id = r.headers["Lambda-Runtime-Aws-Request-Id"]
        deadline = int(r.headers["Lambda-Runtime-Deadline-Ms"])
        event = json.loads(r.read() or b"{}")
    print(f"handling {event}", flush=True)
    if "sleep" in event:
        time.sleep(event["sleep"])
    if "exit" in event:
        sys.exit(event["exit"])
    if "error" in event:
        body, path = {"errorType": "Handled", "errorMessage": event["error"]}, "error"
    else:
        body, path = {"echo": event, "pid": os.getpid(), "deadline_left_ms": deadline - int(time.time() * 1000), "env": os.environ.get("GREETING")}, "response"
    req = urllib.request.Request(f"{api}/invocation/{request_id}/{path}", data=json.dumps(body).encode(), method="POST")
    urllib.request.urlopen(req).read()
