// A small calendar server on the official TypeScript SDK v2 (@modelcontextprotocol/server 2.4.0).
//
// Why it exists: a second, independent 2026-07-28 implementation for mcp-tempest to fuzz, so the
// harness is not tuned to one SDK's habits. Same surface as sdk_server.py:
//   tool     create_event(title, startsAt?)   startsAt missing -> input_required (form elicitation)
//   tool     echo(text)
//   resource calendar://week
//   prompt   prepare_week(focus)
//
// requestState: the SDK applies no integrity protection by default. This server mints one with the
// SDK's HMAC codec (createRequestStateCodec) under --state-key / MCP_TEMPEST_STATE_KEY when given,
// else under a random per-process key (so, like the Python SDK's default, a retry that reaches
// another process is refused with -32602).
//
// Usage: node ts_server.mjs [--transport stdio|http] [--host 127.0.0.1] [--port 8000] [--path /mcp]
//                           [--response-mode auto|json|sse] [--state-key KEY] [--legacy serve|reject]
// --legacy: the SDK default (serve) also answers 2025-11-25 traffic (initialize, or any request without the
// per-request _meta claim) and, on stdio, pins the whole connection to that era; reject makes it modern-only.
// Needs Node >= 22 (see .ci/install-servers.sh --print-node).
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

import {
  McpServer,
  acceptedContent,
  createMcpHandler,
  createRequestStateCodec,
  hostHeaderValidationResponse,
  inputRequired,
  localhostAllowedHostnames,
  localhostAllowedOrigins,
  originValidationResponse,
} from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod';

const { values: opts } = parseArgs({
  options: {
    transport: { type: 'string', default: 'stdio' },
    host: { type: 'string', default: '127.0.0.1' },
    port: { type: 'string', default: '8000' },
    path: { type: 'string', default: '/mcp' },
    'response-mode': { type: 'string', default: 'auto' },
    'state-key': { type: 'string', default: process.env.MCP_TEMPEST_STATE_KEY ?? '' },
    legacy: { type: 'string', default: 'serve' },
  },
  strict: true,
});

if (!['stdio', 'http'].includes(opts.transport)) {
  console.error(`error: --transport must be stdio or http, not ${opts.transport}`);
  process.exit(2);
}
if (!['serve', 'reject'].includes(opts.legacy)) {
  console.error(`error: --legacy must be serve or reject, not ${opts.legacy}`);
  process.exit(2);
}
if (opts['state-key'] && Buffer.byteLength(opts['state-key']) < 32) {
  console.error('error: --state-key must be at least 32 bytes');
  process.exit(2);
}

const codec = createRequestStateCodec({ key: opts['state-key'] || randomBytes(32) });
const whenSchema = z.object({ startsAt: z.string().describe('Start time, ISO 8601 (e.g. 2026-08-03T09:00)') });

function buildServer() {
  const server = new McpServer(
    { name: 'tempest-ts-calendar', version: '0.1.0' },
    {
      instructions: 'Calendar fixture for mcp-tempest tests.',
      requestState: { verify: codec.verify },
    },
  );

  server.registerTool(
    'create_event',
    {
      description: 'Create a calendar event; asks for the start time when it is missing.',
      inputSchema: z.object({ title: z.string(), startsAt: z.string().optional() }),
    },
    async ({ title, startsAt }, ctx) => {
      const answered = acceptedContent(ctx.mcpReq.inputResponses, 'when', whenSchema);
      const start = startsAt ?? answered?.startsAt;
      if (!start) {
        return inputRequired({
          inputRequests: {
            when: inputRequired.elicit({ message: 'When does the event start?', requestedSchema: whenSchema }),
          },
          requestState: await codec.mint({ title, round: 1 }),
        });
      }
      return { content: [{ type: 'text', text: `created ${JSON.stringify(title)} at ${start}` }] };
    },
  );

  server.registerTool(
    'echo',
    { description: 'Return the text unchanged.', inputSchema: z.object({ text: z.string() }) },
    async ({ text }) => ({ content: [{ type: 'text', text }] }),
  );

  server.registerResource(
    'week',
    'calendar://week',
    { description: "This week's events.", mimeType: 'text/plain' },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'Mon 09:00 standup\nWed 14:00 review\n' }] }),
  );

  server.registerPrompt(
    'prepare_week',
    { description: 'Plan the week around a focus.', argsSchema: z.object({ focus: z.string() }) },
    ({ focus }) => ({ messages: [{ role: 'user', content: { type: 'text', text: `Plan my week. Focus: ${focus}.` } }] }),
  );
  return server;
}

if (opts.transport === 'stdio') {
  serveStdio(() => buildServer(), { legacy: opts.legacy });
} else {
  const handler = createMcpHandler(() => buildServer(), {
    responseMode: opts['response-mode'],
    legacy: opts.legacy === 'reject' ? 'reject' : 'stateless',
  });
  const hosts = localhostAllowedHostnames();
  const origins = localhostAllowedOrigins();
  const httpServer = createServer(async (req, res) => {
    try {
      const url = new URL(req.url ?? '/', `http://${req.headers.host ?? '127.0.0.1'}`);
      if (url.pathname !== opts.path) {
        res.writeHead(404).end();
        return;
      }
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) {
        if (Array.isArray(value)) value.forEach((v) => headers.append(name, v));
        else if (value !== undefined) headers.set(name, value);
      }
      const controller = new AbortController();
      res.on('close', () => controller.abort());
      const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
      const request = new Request(url, {
        method: req.method,
        headers,
        body: hasBody ? req : undefined,
        duplex: hasBody ? 'half' : undefined,
        signal: controller.signal,
      });
      const response =
        hostHeaderValidationResponse(request, hosts) ??
        originValidationResponse(request, origins) ??
        (await handler.fetch(request));
      res.writeHead(response.status, Object.fromEntries(response.headers));
      if (response.body) {
        for await (const chunk of response.body) res.write(chunk);
      }
      res.end();
    } catch (err) {
      console.error('request failed:', err);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    }
  });
  httpServer.listen(Number(opts.port), opts.host, () => {
    console.error(`tempest-ts-calendar listening on http://${opts.host}:${opts.port}${opts.path}`);
  });
  const stop = () => {
    httpServer.close();
    handler.close().finally(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
