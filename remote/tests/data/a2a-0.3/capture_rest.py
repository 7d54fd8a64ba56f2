"""Captures a2a-sdk 0.3.26's HTTP+JSON binding (tests/peers/sdk03/server.py --rest) as
request/response pairs, SSE streams raw, into c_sdk03_rest/. Run against a server on
127.0.0.1:27342 started with --work-seconds 1."""
import json, os, sys, time, uuid
import httpx

BASE = "http://127.0.0.1:27342"
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "c_sdk03_rest")

def save(name, req, resp, sse=None):
    rec = {"request": {"method": req.method, "url": str(req.url),
                       "body": json.loads(req.content) if req.content else None},
           "response": {"status": resp.status_code, "headers": dict(resp.headers)}}
    if sse is not None:
        rec["response"]["sse_raw"] = sse
    else:
        try: rec["response"]["body"] = resp.json()
        except Exception: rec["response"]["body"] = None
    json.dump(rec, open(f"{OUT}/{name}.json", "w"), indent=2)

def events(raw):
    blocks = raw.replace("\r\n", "\n").split("\n\n")
    return [json.loads("\n".join(l[5:] for l in b.splitlines() if l.startswith("data:"))) for b in blocks if "data:" in b]

def stream(c, name, path, body):
    req = c.build_request("POST", BASE + path, json=body, headers={"Accept": "text/event-stream"})
    r = c.send(req, stream=True); raw = "".join(r.iter_text()); r.close()
    save(name, req, r, sse=raw)
    return events(raw)

def call(c, name, method, path, body=None):
    req = c.build_request(method, BASE + path, json=body) if body is not None else c.build_request(method, BASE + path)
    r = c.send(req); save(name, req, r); return r

def msg(text, task=None, ctx=None):
    m = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "content": [{"text": text}]}
    if task: m["taskId"], m["contextId"] = task, ctx
    return m

os.makedirs(OUT, exist_ok=True)
with httpx.Client(timeout=30) as c:
    call(c, "01_agent_card", "GET", "/.well-known/agent-card.json")
    ev = stream(c, "02_message_stream_first_turn", "/v1/message:stream", {"request": msg("Build me a widget")})
    tid, ctx = ev[0]["task"]["id"], ev[0]["task"]["contextId"]
    call(c, "03_tasks_get_input_required", "GET", f"/v1/tasks/{tid}?historyLength=0")
    call(c, "04_push_config_set", "POST", f"/v1/tasks/{tid}/pushNotificationConfigs",
         {"parent": f"tasks/{tid}", "configId": "standin-1",
          "config": {"name": f"tasks/{tid}/pushNotificationConfigs/standin-1",
                     "pushNotificationConfig": {"id": "standin-1", "url": "http://127.0.0.1:1/push", "token": "tok-0123456789",
                                                "authentication": {"schemes": ["Bearer"], "credentials": "tok-0123456789"}}}})
    stream(c, "05_message_stream_follow_up", "/v1/message:stream", {"request": msg("blue", tid, ctx)})
    time.sleep(0.5)
    call(c, "06_tasks_get_completed", "GET", f"/v1/tasks/{tid}?historyLength=0")
    call(c, "07_push_config_delete", "DELETE", f"/v1/tasks/{tid}/pushNotificationConfigs/standin-1")
    call(c, "08_tasks_get_unknown", "GET", "/v1/tasks/no-such-task?historyLength=0")
    r = call(c, "09_message_send_first_turn", "POST", "/v1/message:send",
             {"request": msg("Build me another widget"), "configuration": {"blocking": False}})
    t2 = r.json()["task"]["id"]
    call(c, "10_cancel_input_required", "POST", f"/v1/tasks/{t2}:cancel", {})
print("captured", len(os.listdir(OUT)), "files")
