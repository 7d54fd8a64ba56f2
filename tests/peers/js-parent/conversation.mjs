// A parent that speaks only A2A, in JavaScript: the official @a2a-js/sdk 1.3 client,
// through Stand-in's A2A front at {control URL}/a2a/{agent}. It starts a task with a push
// notification config (its own webhook on loopback, and a token), is asked a question,
// answers, reads the task back and finds it in ListTasks, lists its push configs, then
// starts a second task and cancels it. It prints what it saw as one JSON object; the
// Rust test (tests/tests/a2a_front.rs) judges it.
import http from "node:http";
import { randomUUID } from "node:crypto";
import { ClientFactory } from "@a2a-js/sdk/client";
import { Role, taskStateToJSON } from "@a2a-js/sdk";

const arg = (name) => process.argv[process.argv.indexOf(name) + 1];
const url = arg("--url");
const port = Number(arg("--port"));
const token = `js-token-${randomUUID()}`;

const received = [];
const server = http.createServer((req, res) => {
  let body = "";
  req.on("data", (chunk) => (body += chunk));
  req.on("end", () => {
    const event = JSON.parse(body);
    const kind = Object.keys(event)[0];
    received.push({
      kind,
      token: req.headers["x-a2a-notification-token"] ?? null,
      seq: event[kind]?.metadata?.seq ?? null,
      state: event[kind]?.status?.state ?? null,
      artifact: event[kind]?.artifact?.name ?? null,
    });
    res.writeHead(200).end();
  });
});
await new Promise((ready) => server.listen(port, "127.0.0.1", ready));

const message = (text, taskId = "") => ({
  messageId: randomUUID(),
  contextId: "",
  taskId,
  role: Role.ROLE_USER,
  parts: [{ content: { $case: "text", value: text } }],
});
const state = (task) => taskStateToJSON(task.status.state);
const said = (task) =>
  (task.status.message?.parts ?? []).map((p) => p.content?.value ?? "").join(" ");
const until = async (check, seconds) => {
  for (let waited = 0; waited < seconds * 4; waited++) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
};
const heard = (name) => received.some((r) => r.state === name);

const seen = { token };
const client = await new ClientFactory().createFromUrl(url + "/");
const asked = await client.sendMessage({
  message: message("Please paint the widget"),
  configuration: { taskPushNotificationConfig: { url: `http://127.0.0.1:${port}/js`, token } },
});
const taskId = asked.id;
seen.asked = { id: taskId, state: state(asked), text: said(asked) };
seen.heard_question = await until(() => heard("TASK_STATE_INPUT_REQUIRED"), 60);
const done = await client.sendMessage({ message: message("blue", taskId) });
seen.done = {
  state: state(done),
  text: said(done),
  artifacts: (done.artifacts ?? []).map((a) => a.name),
};
seen.heard_end = await until(() => heard("TASK_STATE_COMPLETED"), 60);
const got = await client.getTask({ id: taskId });
seen.got = { state: state(got), history: (got.history ?? []).length };
// Every page: the front pages the stand-ins as the control API does.
seen.listed = false;
for (let pageToken = "", pages = 0; pages < 500; pages++) {
  // As a caller writes it, the status left out (the SDK sends it as "UNRECOGNIZED").
  const page = await client.listTasks({ pageToken });
  seen.listed ||= (page.tasks ?? []).some((t) => t.id === taskId);
  pageToken = page.nextPageToken ?? "";
  if (!pageToken) break;
}
const configs = await client.listTaskPushNotificationConfig({ taskId });
seen.configs = (configs.configs ?? []).map((c) => c.id);

const second = await client.sendMessage({
  message: message("Paint another"),
  configuration: { returnImmediately: true },
});
for (let i = 0; i < 100; i++) {
  const now = await client.getTask({ id: second.id });
  if (state(now) === "TASK_STATE_INPUT_REQUIRED") break;
  await new Promise((r) => setTimeout(r, 300));
}
seen.canceled = state(await client.cancelTask({ id: second.id }));
try {
  await client.getTask({ id: "si-no-such-task" });
  seen.unknown = "found";
} catch (err) {
  seen.unknown = err.constructor.name;
}
server.close();
seen.received = received;
console.log(JSON.stringify(seen));
