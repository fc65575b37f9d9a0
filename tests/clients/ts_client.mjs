// The client job of client mode on the TypeScript SDK v2 client (@modelcontextprotocol/client 2.4.0).
//
//     python tests/servers/run_node.py tests/clients/ts_client.mjs SERVER COMMAND ...   # stdio
//     python tests/servers/run_node.py tests/clients/ts_client.mjs URL                  # Streamable HTTP
//
// The job of tests/clients/ref_client.py as a TypeScript application writes it: versionNegotiation
// "auto" (the SDK's default is the 2025 handshake, which a 2026-07-28 server does not speak),
// request handlers for elicitation (declined), sampling (a fixed text) and roots (none), which the
// SDK's input_required driver calls. After each step one JSON line, as tests/clients/readings.py.
// The package is installed by .ci/install-servers.sh into tests/servers/node_modules.

import { Client, StreamableHTTPClientTransport } from "../servers/node_modules/@modelcontextprotocol/client/dist/index.mjs";
import { StdioClientTransport } from "../servers/node_modules/@modelcontextprotocol/client/dist/stdio.mjs";

const STEP_TIMEOUT_MS = 8000;

function emit(step, outcome, resultType = null, code = null, note = "") {
  const line = { step, outcome, resultType, code };
  if (note) line.note = String(note).slice(0, 300);
  process.stdout.write(JSON.stringify(line) + "\n");
}

function outcomeOf(err) {
  // A JSON-RPC error from the server carries its integer code; anything else is the client refusing.
  const code = err && typeof err.code === "number" && Number.isInteger(err.code) && err.code < 0 ? err.code : null;
  return code !== null ? ["error", code] : ["invalid", null];
}

async function step(method, call) {
  try {
    const result = await call();
    emit(method, "complete", result && typeof result.resultType === "string" ? result.resultType : null);
    return result;
  } catch (err) {
    const [outcome, code] = outcomeOf(err);
    emit(method, outcome, null, code, `${err && err.name}: ${err && err.message}`);
    return null;
  }
}

async function main(argv) {
  if (argv.length === 0) {
    process.stderr.write("usage: ts_client.mjs SERVER COMMAND ... | URL\n");
    return 2;
  }
  const transport = /^https?:\/\//.test(argv[0])
    ? new StreamableHTTPClientTransport(new URL(argv[0]))
    : new StdioClientTransport({ command: argv[0], args: argv.slice(1) });
  const client = new Client(
    { name: "tempest-ts-client", version: "1.0" },
    { capabilities: { elicitation: { form: {} }, sampling: {}, roots: {} }, versionNegotiation: { mode: "auto" } },
  );
  client.setRequestHandler("elicitation/create", async () => ({ action: "decline" }));
  client.setRequestHandler("sampling/createMessage", async () => ({
    role: "assistant", content: { type: "text", text: "ok" }, model: "tempest-ts",
  }));
  client.setRequestHandler("roots/list", async () => ({ roots: [] }));
  const opts = { timeout: STEP_TIMEOUT_MS };
  try {
    await client.connect(transport, opts);
  } catch (err) {
    const [outcome, code] = outcomeOf(err);
    emit("server/discover", outcome, null, code, `${err && err.name}: ${err && err.message}`);
    return 0;
  }
  emit("server/discover", "complete");
  const listed = await step("tools/list", () => client.listTools({}, opts));
  const name = listed && listed.tools && listed.tools.length ? listed.tools[0].name : "echo";
  await step("tools/call", () => client.callTool({ name, arguments: {} }, opts));
  await Promise.all([
    step("resources/list", () => client.listResources({}, opts)),
    step("prompts/list", () => client.listPrompts({}, opts)),
  ]);
  await step("resources/read", () => client.readResource({ uri: "tempest://r" }, opts));
  await step("prompts/get", () => client.getPrompt({ name: "greet", arguments: {} }, opts));
  try {
    await client.close();
  } catch {
    // closing is not part of the job
  }
  return 0;
}

main(process.argv.slice(2)).then((code) => process.exit(code), (err) => {
  process.stderr.write(String(err && err.stack) + "\n");
  process.exit(1);
});
