// The file tools of @google/gemini-cli-core (Gemini CLI's core), or of its fork
// @qwen-code/qwen-code-core (Qwen Code's core), served over MCP (stdio).
//
//   node gemini_tools.mjs CORE_ENTRY ROOT STATE_DIR [TOOL...]
//
// CORE_ENTRY is the package's dist/index.js inside the peer cache. The adapter builds the
// same Config the CLI builds (target directory = ROOT, approval mode YOLO, telemetry and
// usage statistics off, LLM correction off: the package's default), lets it create its own
// tool registry (config.initialize()), and serves the registry's tools named on the command
// line (default: read_file, write_file and the edit tool) under their own names and
// parameter schemas. A call runs as the CLI's scheduler runs it: tool.build(args) (its
// validation, confinement included), shouldConfirmExecute() answered by the policy engine
// (YOLO: allow; a tool that still asks for confirmation is reported, never confirmed here;
// the fork's scheduler instead proceeds in YOLO mode whatever the tool asks, and so does the
// adapter for it), then execute(). Nothing of the tool is patched or reimplemented.
//
// The fork's differences, chosen by the package's name: its edit tool is "edit", not
// "replace"; its file tools take absolute paths only ("File path must be absolute"), so a
// relative path argument (file_path, absolute_path) is joined to ROOT, as the model is told
// to do (a path that climbs out stays outside: the tool's own workspace check sees it);
// its tools call no model at all (no LLM correction in the fork), so no content generator
// is created; execute() takes the abort signal itself.
//
// Nothing leaves the machine: HOME is STATE_DIR/home (the CLI's ~/.gemini or ~/.qwen: its
// project temp directory and chat log), the content generator is created with a dummy key
// and a model endpoint on loopback where nothing listens (the adapter refuses any other
// endpoint), and every console line of the core goes to stderr (stdout is the MCP channel).
//
// A result is the tool's llmContent: the text the model would see (structured content
// "output"; a non-text answer, e.g. an image part, is "parts"). A failure is an MCP error
// result whose text starts with the tool's own ToolErrorType ("file_not_found: ...");
// a parameter the tool's validation refuses is "invalid_tool_params: ..." as in the CLI's
// scheduler.

import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const MODEL_ENDPOINT = 'http://127.0.0.1:9';

for (const method of ['log', 'info', 'debug', 'warn', 'error', 'trace']) {
  console[method] = (...args) => process.stderr.write(args.map(String).join(' ') + '\n');
}

const [coreEntry, root, stateDir, ...wanted] = process.argv.slice(2);
if (!coreEntry || !root || !stateDir) {
  process.stderr.write('usage: node gemini_tools.mjs CORE_ENTRY ROOT STATE_DIR [TOOL...]\n');
  process.exit(2);
}
const packageName = JSON.parse(
  fs.readFileSync(path.join(path.dirname(coreEntry), '..', 'package.json'), 'utf8'),
).name;
const qwen = packageName === '@qwen-code/qwen-code-core';
const toolNames = wanted.length ? wanted : ['read_file', 'write_file', qwen ? 'edit' : 'replace'];
const PATH_ARGUMENTS = ['file_path', 'absolute_path'];

function loopbackOnly(url) {
  const host = new URL(url).hostname;
  if (!['127.0.0.1', 'localhost', '[::1]', '::1'].includes(host)) {
    process.stderr.write(`refusing to start: the model endpoint ${url} is not loopback\n`);
    process.exit(2);
  }
}
loopbackOnly(MODEL_ENDPOINT);

const home = path.join(stateDir, 'home');
fs.mkdirSync(home, { recursive: true });
process.env.HOME = home;
for (const name of ['GOOGLE_GEMINI_BASE_URL', 'GOOGLE_VERTEX_BASE_URL', 'GEMINI_API_KEY',
  'GOOGLE_API_KEY', 'GOOGLE_CLOUD_PROJECT', 'GOOGLE_APPLICATION_CREDENTIALS',
  'OPENAI_BASE_URL', 'OPENAI_API_KEY', 'OPENAI_MODEL', 'DASHSCOPE_API_KEY']) {
  delete process.env[name];
}

const core = await import(pathToFileURL(coreEntry).href);
const require = createRequire(coreEntry);
const sdk = (name) => import(pathToFileURL(require.resolve(`@modelcontextprotocol/sdk/${name}`)).href);
const { Server } = await sdk('server/index.js');
const { StdioServerTransport } = await sdk('server/stdio.js');
const { ListToolsRequestSchema, CallToolRequestSchema } = await sdk('types.js');

const config = new core.Config({
  sessionId: 'editspec',
  targetDir: root,
  cwd: root,
  debugMode: false,
  model: core.DEFAULT_GEMINI_MODEL,
  approvalMode: core.ApprovalMode.YOLO,
  usageStatisticsEnabled: false,
  telemetry: { enabled: false },
  checkpointing: false,
  interactive: false,
});
await config.initialize();
if (!qwen) {
  await config.refreshAuth(core.AuthType.USE_GEMINI, 'editspec-offline', MODEL_ENDPOINT);
  if (!config.getDisableLLMCorrection()) {
    process.stderr.write('refusing to start: LLM correction is on (it would call the model)\n');
    process.exit(2);
  }
}
const registry = config.getToolRegistry();
const tools = new Map();
for (const name of toolNames) {
  const tool = registry.getTool(name);
  if (!tool) {
    process.stderr.write(`the core has no tool ${name}\n`);
    process.exit(2);
  }
  tools.set(name, tool);
}

function failure(type, message) {
  return { isError: true, content: [{ type: 'text', text: `${type}: ${message}` }] };
}

async function run(name, args) {
  const tool = tools.get(name);
  if (!tool) return failure('tool_not_registered', `no tool ${name}`);
  const given = { ...(args ?? {}) };
  if (qwen) {
    for (const key of PATH_ARGUMENTS) {
      if (typeof given[key] === 'string' && given[key] !== '' && !path.isAbsolute(given[key])) {
        given[key] = `${root}/${given[key]}`; // not path.join: '..' is the tool's to resolve
      }
    }
  }
  let invocation;
  try {
    invocation = tool.build(given);
  } catch (error) {
    return failure(core.ToolErrorType.INVALID_TOOL_PARAMS, error?.message ?? String(error));
  }
  const signal = new AbortController().signal;
  const confirmation = await invocation.shouldConfirmExecute(signal);
  // The fork's scheduler (coreToolScheduler) asks every tool, then lets a call that wants
  // confirmation run in YOLO mode without confirming it (ProceedAlways); Gemini's policy
  // engine answers inside shouldConfirmExecute, so there a request is reported.
  const proceeds = qwen && config.getApprovalMode() === core.ApprovalMode.YOLO;
  if (confirmation && !proceeds) {
    return failure('editspec_adapter', `${name} asks for confirmation in YOLO mode: not confirmed`);
  }
  let result;
  try {
    result = await invocation.execute(qwen ? signal : { abortSignal: signal });
  } catch (error) {
    return failure(core.ToolErrorType.UNHANDLED_EXCEPTION, error?.message ?? String(error));
  }
  if (result.error) {
    return failure(result.error.type ?? core.ToolErrorType.UNKNOWN, result.error.message);
  }
  const output = result.llmContent;
  const structured = typeof output === 'string' ? { output } : { parts: output };
  const text = typeof output === 'string' ? output : JSON.stringify(output);
  return { content: [{ type: 'text', text }], structuredContent: structured };
}

const server = new Server(
  { name: `${packageName} (editspec adapter)`, version: core.CLI_VERSION ?? 'unknown' },
  { capabilities: { tools: {} } },
);
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [...tools.values()].map((tool) => ({
    name: tool.name,
    description: tool.description,
    inputSchema: tool.schema.parametersJsonSchema,
  })),
}));
server.setRequestHandler(CallToolRequestSchema, async (request) =>
  run(request.params.name, request.params.arguments),
);
process.stdin.on('end', () => process.exit(0));
await server.connect(new StdioServerTransport());
