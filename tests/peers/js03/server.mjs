// A widget agent on the official JavaScript SDK, @a2a-js/sdk 0.3 (A2A 0.3, JSON-RPC over
// Express), with the SDK's own push sender: asks a question (input-required), works a
// while, completes. The end-to-end tests run the stand-in against it.
//
//     node server.mjs --port 27145 [--work-seconds 3]

import { randomUUID } from "node:crypto";
import express from "express";
import {
  DefaultPushNotificationSender,
  DefaultRequestHandler,
  DefaultExecutionEventBusManager,
  InMemoryPushNotificationStore,
  InMemoryTaskStore,
} from "@a2a-js/sdk/server";
import { A2AExpressApp } from "@a2a-js/sdk/server/express";

const arg = (name, fallback) => {
  const at = process.argv.indexOf(name);
  return at > 0 ? process.argv[at + 1] : fallback;
};
const port = Number(arg("--port"));
const workSeconds = Number(arg("--work-seconds", "3"));
if (!port) throw new Error("--port is required");

const card = {
  name: "Widget agent (@a2a-js/sdk 0.3)",
  description: "Asks one question, then works and completes.",
  url: `http://127.0.0.1:${port}/`,
  preferredTransport: "JSONRPC",
  protocolVersion: "0.3.0",
  version: "0.0.1",
  capabilities: { streaming: true, pushNotifications: true },
  defaultInputModes: ["text"],
  defaultOutputModes: ["text"],
  skills: [{ id: "widget", name: "Build widget", description: "Builds a widget", tags: ["demo"] }],
};

const agentMessage = (taskId, contextId, text) => ({
  kind: "message",
  messageId: randomUUID(),
  role: "agent",
  parts: [{ kind: "text", text }],
  taskId,
  contextId,
});

const status = (taskId, contextId, state, text, final) => ({
  kind: "status-update",
  taskId,
  contextId,
  status: {
    state,
    message: text ? agentMessage(taskId, contextId, text) : undefined,
    timestamp: new Date().toISOString(),
  },
  final,
});

class WidgetExecutor {
  async execute(context, bus) {
    const { taskId, contextId, userMessage, task } = context;
    if (!task) {
      bus.publish({
        kind: "task",
        id: taskId,
        contextId,
        status: { state: "submitted", timestamp: new Date().toISOString() },
        history: [userMessage],
      });
      bus.publish(status(taskId, contextId, "input-required", "Which colour should the widget be?", true));
      bus.finished();
      return;
    }
    const colour = userMessage.parts.find((p) => p.kind === "text")?.text || "plain";
    bus.publish(status(taskId, contextId, "working", `Building a ${colour} widget...`, false));
    await new Promise((done) => setTimeout(done, workSeconds * 1000));
    bus.publish(status(taskId, contextId, "completed", `Your ${colour} widget is ready.`, true));
    bus.finished();
  }

  async cancelTask(taskId, bus) {
    bus.publish(status(taskId, undefined, "canceled", undefined, true));
    bus.finished();
  }
}

const pushStore = new InMemoryPushNotificationStore();
const handler = new DefaultRequestHandler(
  card,
  new InMemoryTaskStore(),
  new WidgetExecutor(),
  new DefaultExecutionEventBusManager(),
  pushStore,
  new DefaultPushNotificationSender(pushStore),
);
const app = new A2AExpressApp(handler).setupRoutes(express());
app.listen(port, "127.0.0.1");
