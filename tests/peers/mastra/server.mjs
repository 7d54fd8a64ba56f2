// An agent built with Mastra and served by its own A2A routes (@mastra/hono), on a
// scripted model: a language model of the AI SDK's provider interface (v2) that asks
// through a tool first ("Which colour?", the tool suspends: the A2A task goes
// INPUT_REQUIRED) and then answers "<colour> widget done", streamed word by word, with
// no LLM and no network.
//
//     node server.mjs --port 27180
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { MastraServer } from '@mastra/hono';
import { Mastra } from '@mastra/core/mastra';
import { Agent } from '@mastra/core/agent';
import { createTool } from '@mastra/core/tools';
import { InMemoryStore } from '@mastra/core/storage';
import { InMemoryTaskStore } from '@mastra/server/a2a/store';
import { z } from 'zod';

const port = Number(process.argv[process.argv.indexOf('--port') + 1]);

const askColour = createTool({
  id: 'ask-colour',
  description: 'Asks the user which colour the widget should be.',
  inputSchema: z.object({}),
  suspendSchema: z.object({ message: z.string() }),
  execute: async (_input, context) => {
    const agent = context?.agent;
    if (agent?.resumeData === undefined) {
      await agent.suspend({ message: 'Which colour?' });
      return undefined;
    }
    return { colour: String(agent.resumeData) };
  },
});

// The colour the tool returned, once it has: the model's cue to answer.
function colourOf(prompt) {
  for (const message of prompt) {
    if (message.role !== 'tool') continue;
    for (const part of message.content) {
      const value = part.output?.value ?? part.result;
      if (value && typeof value === 'object' && value.colour) return value.colour;
    }
  }
  return undefined;
}

const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };

// One reply of the script: a tool call until the tool has answered, then the answer.
function script(prompt) {
  const colour = colourOf(prompt);
  if (colour === undefined) {
    return { toolCall: { toolCallId: `call-${Date.now()}`, toolName: 'ask-colour', input: '{}' } };
  }
  return { words: [`${colour} `, 'widget ', 'done'] };
}

const scriptedModel = {
  specificationVersion: 'v2',
  provider: 'scripted',
  modelId: 'scripted-widgets',
  supportedUrls: {},
  async doGenerate({ prompt }) {
    const { toolCall, words } = script(prompt);
    return toolCall
      ? { content: [{ type: 'tool-call', ...toolCall }], finishReason: 'tool-calls', usage, warnings: [] }
      : { content: [{ type: 'text', text: words.join('') }], finishReason: 'stop', usage, warnings: [] };
  },
  async doStream({ prompt }) {
    const { toolCall, words } = script(prompt);
    const parts = [{ type: 'stream-start', warnings: [] }];
    if (toolCall) {
      parts.push({ type: 'tool-call', ...toolCall }, { type: 'finish', finishReason: 'tool-calls', usage });
    } else {
      parts.push({ type: 'text-start', id: 't1' });
      for (const delta of words) parts.push({ type: 'text-delta', id: 't1', delta });
      parts.push({ type: 'text-end', id: 't1' }, { type: 'finish', finishReason: 'stop', usage });
    }
    const stream = new ReadableStream({
      async start(controller) {
        for (const part of parts) {
          controller.enqueue(part);
          await new Promise((r) => setTimeout(r, 20));
        }
        controller.close();
      },
    });
    return { stream };
  },
};

const widgets = new Agent({
  id: 'widgets',
  name: 'Mastra scripted agent',
  description: 'builds widgets',
  instructions: 'Ask which colour, then build the widget.',
  model: scriptedModel,
  tools: { askColour },
});

const mastra = new Mastra({ agents: { widgets }, storage: new InMemoryStore(), logger: false });
const app = new Hono();
const server = new MastraServer({ app, mastra, taskStore: new InMemoryTaskStore() });
await server.init();
serve({ fetch: app.fetch, hostname: '127.0.0.1', port });
