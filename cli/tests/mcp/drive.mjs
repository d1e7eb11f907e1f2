// Drives `oxwright mcp` with the official TypeScript MCP SDK (the client
// library most agents are built on), over stdio or streamable HTTP: tools
// listed and every input schema compiled by Ajv in strict mode (as clients
// that validate arguments do), a short session through snapshot, refs,
// screenshot and fetch, and the typed errors. Prints "ts checks ok".
//
//   node drive.mjs stdio <oxwright binary> <fixture base> <server args as JSON>
//   node drive.mjs http <server /mcp URL> <fixture base> <bearer token>
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const modules = path.join(root, 'infra/node/node_modules');
const load = (p) => import(pathToFileURL(path.join(modules, p)).href);
const { Client } = await load('@modelcontextprotocol/sdk/dist/esm/client/index.js');
const { StdioClientTransport } = await load('@modelcontextprotocol/sdk/dist/esm/client/stdio.js');
const { StreamableHTTPClientTransport } = await load('@modelcontextprotocol/sdk/dist/esm/client/streamableHttp.js');
const Ajv = createRequire(path.join(modules, 'x.js'))('ajv').default;

const [mode, where, base, extra] = process.argv.slice(2);
let checks = 0;
const check = (ok, what, detail = '') => {
  if (!ok) {
    console.error(`CHECK FAILED: ${what}\n${String(detail).slice(0, 3000)}`);
    process.exit(1);
  }
  checks++;
};
const transport = () => mode === 'stdio'
  ? new StdioClientTransport({ command: where, args: JSON.parse(extra), stderr: 'ignore' })
  : new StreamableHTTPClientTransport(new URL(where), { requestInit: { headers: { Authorization: `Bearer ${extra}` } } });

const client = new Client({ name: 'oxwright-ts-check', version: '1.0.0' });
await client.connect(transport());
const text = (r) => r.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
const call = async (name, args = {}, error = false) => {
  const r = await client.callTool({ name, arguments: args });
  check(Boolean(r.isError) === error, `${name} ${JSON.stringify(args)} ${error ? 'fails' : 'succeeds'}`, text(r));
  return r;
};

// Every schema compiles in strict mode, and says what it takes.
const { tools } = await client.listTools();
check(tools.length >= 32, 'tools listed', tools.map((t) => t.name));
const ajv = new Ajv({ strict: true, allErrors: true });
const validators = {};
for (const t of tools) {
  try {
    validators[t.name] = ajv.compile(t.inputSchema);
  } catch (e) {
    check(false, `${t.name}'s schema compiles in strict mode`, e.message);
  }
  check(t.description && t.inputSchema.type === 'object', `${t.name} has a description and an object schema`);
}
check(validators.browser_click({ target: 'e3', button: 'right', modifiers: ['Shift'] }), 'a right click with shift is valid',
  JSON.stringify(validators.browser_click.errors));
check(!validators.browser_click({ target: 'e3', button: 'sideways' }), 'an unknown button is not');
check(!validators.browser_navigate({}), 'navigate without a url is not');
check(validators.browser_snapshot({ target: '#main', depth: 2 }), 'a snapshot of a region to a depth is valid',
  JSON.stringify(validators.browser_snapshot.errors));

// A session: navigate, snapshot, act by ref, a stale ref, a screenshot, a fetch.
let r = await call('browser_navigate', { url: `${base}/app/login` });
check(text(r).includes(`Page URL: ${base}/app/login`), 'navigated', text(r));
r = await call('browser_snapshot');
const snap = text(r);
const user = (snap.match(/textbox "Username"[^\n]*\[ref=(e\d+)\]/) || [])[1];
const remember = (snap.match(/checkbox "Remember me"[^\n]*\[ref=(e\d+)\]/) || [])[1];
check(user && remember, 'refs in the snapshot', snap);
await call('browser_type', { element: 'Username', target: user, text: 'alice' });
await call('browser_click', { element: 'Remember me', target: remember });
r = await call('browser_find', { text: 'remember me' });
check(/checkbox "Remember me" \[checked\]/.test(text(r)), 'the click checked the box', text(r));
r = await call('browser_click', { target: 'e99999' }, true);
check(text(r).includes('browser_snapshot'), 'a stale ref says to take a new snapshot', text(r));
r = await call('browser_take_screenshot', {});
const image = r.content.find((c) => c.type === 'image');
check(image && image.mimeType === 'image/png' && Buffer.from(image.data, 'base64').subarray(1, 4).toString() === 'PNG',
  'a PNG image in the result', JSON.stringify(r.content.map((c) => c.type)));
r = await call('fetch_markdown', { url: `${base}/` });
check(r.structuredContent && typeof r.structuredContent === 'object' && text(r).includes('# '),
  'fetch_markdown returns Markdown and a structured result', text(r));
r = await call('browser_navigate', { url: 'file:///etc/hostname' }, true);
check(text(r).includes('file:// URLs are refused'), 'file:// refused', text(r));
await client.close();

if (mode === 'http') {
  // Without the token the server turns the client away.
  const stranger = new Client({ name: 'no-token', version: '1.0.0' });
  let refused = '';
  try {
    await stranger.connect(new StreamableHTTPClientTransport(new URL(where)));
  } catch (e) {
    refused = String(e);
  }
  check(/401|unauthori[sz]ed|bearer token is required/i.test(refused), 'a client without the token is refused', refused || 'it connected');
}
console.log(`ts checks ok (${checks})`);
process.exit(0);
