// A real MCP client — the TypeScript SDK, pinned in package.json — against `forgec mcp serve`.
// tests/test_mcp_clients.py runs it: `node ts-client.mjs '<json config>'`, and reads ONE JSON
// object from stdout with what the client saw. Any exception the SDK throws is caught and
// reported as {"threw": message}, so the test shows exactly which call broke the client.
//
// config: {command, args, env, protocol, enable: {command, args}}
// protocol: the version the client speaks. 1.32 always proposes its latest (2025-11-25) and
// accepts any it supports; to speak an older one (2025-06-18, what SDK 1.13–1.2x proposed) the
// initialize request is rewritten on the wire, which is exactly what such a client sends.
import { execFileSync } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const config = JSON.parse(process.argv[2]);
const out = { steps: {} };

async function step(name, fn) {
  try {
    out.steps[name] = await fn();
  } catch (err) {
    out.steps[name] = { threw: String(err && err.message ? err.message : err) };
  }
}

function summary(result) {
  return {
    isError: result.isError === true,
    text: (result.content || []).filter((c) => c.type === 'text').map((c) => c.text),
    structuredContent: result.structuredContent ?? null,
    meta: result._meta ?? null,
  };
}

const transport = new StdioClientTransport({
  command: config.command,
  args: config.args,
  env: config.env,
  stderr: 'inherit',
});
if (config.protocol !== '2025-11-25') {
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    if (message.method === 'initialize') {
      message = { ...message, params: { ...message.params, protocolVersion: config.protocol } };
    }
    return send(message, options);
  };
}

// record the version the server answered (the transport does not keep it)
let negotiated = null;
const start = transport.start.bind(transport);
transport.start = async () => {
  const deliver = transport.onmessage;
  transport.onmessage = (message, extra) => {
    if (message.result && typeof message.result.protocolVersion === 'string') {
      negotiated = message.result.protocolVersion;
    }
    deliver(message, extra);
  };
  return start();
};

let changed = 0;
let wake = null;
const client = new Client({ name: 'forgec-ts-test', version: '0.0.0' }, { capabilities: {} });
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  changed += 1;
  if (wake) wake();
});

try {
  await client.connect(transport);
  out.protocol = negotiated;
  out.capabilities = client.getServerCapabilities();
  out.instructions = client.getInstructions() ?? null;

  await step('list', async () => {
    const listed = await client.listTools();
    return listed.tools.map((t) => ({
      name: t.name,
      annotations: t.annotations ?? null,
      hasOutputSchema: Boolean(t.outputSchema),
      meta: t._meta ?? null,
    }));
  });
  await step('ok', async () => summary(await client.callTool({ name: 'dynamic_greet', arguments: { name: 'Ann' } })));
  await step('failed', async () => summary(await client.callTool({ name: 'dynamic_greet', arguments: { name: 'fail' } })));
  await step('refusedByLabel', async () =>
    summary(await client.callTool({ name: 'channel_send', arguments: { channelId: 'alerts', content: 'hi' } })));
  await step('createValid', async () =>
    summary(await client.callTool({
      name: 'tool_create',
      arguments: { manifest: config.validManifest, target: 'talos' },
    })));
  await step('createInvalid', async () =>
    summary(await client.callTool({
      name: 'tool_create',
      arguments: { manifest: { ...config.validManifest, id: 'Bad Id', title: '' } },
    })));
  await step('listChanged', async () => {
    const before = changed;
    execFileSync(config.enable.command, config.enable.args, { env: config.env, stdio: 'ignore' });
    await new Promise((resolve) => {
      const timer = setTimeout(resolve, 10000);
      wake = () => { clearTimeout(timer); resolve(); };
      if (changed > before) wake();
    });
    const listed = await client.listTools();
    return { notified: changed > before, names: listed.tools.map((t) => t.name) };
  });
} catch (err) {
  out.fatal = String(err && err.message ? err.message : err);
} finally {
  await client.close().catch(() => {});
}
process.stdout.write(JSON.stringify(out) + '\n');
