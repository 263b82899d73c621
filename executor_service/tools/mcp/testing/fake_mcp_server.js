// A small MCP stdio server for the executor's tests: what the reference servers cannot do
// (malformed JSON-RPC, replies to unknown ids, a 10 MB result, an unsupported protocol
// version, a crash mid-call, a hang, a schema that changes, sandbox escape attempts).
// `whoami` shows which credential the server got, never the credential: the first 16 hex
// digits of the SHA-256 of $FAKE_SECRET (stdio) or of the bearer token (--http).
// Usage: node fake_mcp_server.js [--version=V] [--malformed] [--instance=ID] [--http=PORT]
// (--instance is ignored: it only lets a test find its own servers among the host's processes;
// --http serves `whoami` alone over streamable HTTP on 127.0.0.1:PORT)
'use strict';
const crypto = require('crypto');
const fs = require('fs');
const net = require('net');

const args = process.argv.slice(2);
const forcedVersion = (args.find((a) => a.startsWith('--version=')) || '').slice(10);
const malformed = args.includes('--malformed');
const httpPort = (args.find((a) => a.startsWith('--http=')) || '').slice(7);

function send(message) { process.stdout.write(JSON.stringify(message) + '\n'); }
function reply(id, result) { send({ jsonrpc: '2.0', id, result }); }
function text(t, isError) { return { content: [{ type: 'text', text: t }], isError: !!isError }; }
function whoami(credential) {
  if (!credential) return text('no credential');
  const hash = crypto.createHash('sha256').update(credential).digest('hex');
  return text('credential sha256:' + hash.slice(0, 16));
}
const whoamiTool = { name: 'whoami', description: 'Shows a hash of the credential it was given',
                     annotations: { readOnlyHint: true }, inputSchema: { type: 'object', properties: {} } };

const str = { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] };
// The schema of `echo` changes when the workspace holds .schema_v2 (a server upgraded mid-run).
function echoSchema() {
  if (fs.existsSync('.schema_v2')) {
    return { type: 'object', properties: { message: { type: 'string' }, loud: { type: 'boolean' } },
             required: ['message'] };
  }
  return str;
}
function tools() {
  const ro = { readOnlyHint: true };
  return [
    { name: 'echo', description: 'Echoes message', inputSchema: echoSchema(), annotations: ro },
    { name: 'structured', description: 'Weather as structured content', annotations: ro,
      inputSchema: { type: 'object', properties: {} } },
    { name: 'fail', description: 'Always fails (isError)', annotations: ro,
      inputSchema: { type: 'object', properties: {} } },
    { name: 'write_note', description: 'Writes note.txt in the workspace',
      inputSchema: str },
    { name: 'big', description: 'Returns a 10 MB text', annotations: ro,
      inputSchema: { type: 'object', properties: {} } },
    { name: 'hang', description: 'Never answers', annotations: ro,
      inputSchema: { type: 'object', properties: {} } },
    { name: 'crash', description: 'Exits mid-call', annotations: ro,
      inputSchema: { type: 'object', properties: {} } },
    { name: 'read_path', description: 'Reads a file by absolute path', annotations: ro,
      inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } },
    { name: 'connect', description: 'Opens a TCP connection to host:port', annotations: ro,
      inputSchema: { type: 'object', properties: { host: { type: 'string' }, port: { type: 'integer' } },
                     required: ['host', 'port'] } },
    { name: 'env', description: 'Shows $FAKE_SECRET', annotations: ro,
      inputSchema: { type: 'object', properties: {} } },
    { name: 'meta', description: 'Shows the _meta its tools/call request carried', annotations: ro,
      inputSchema: { type: 'object', properties: {} } },
    { name: 'fancy', description: 'Uses anyOf (the executor cannot validate it)', annotations: ro,
      inputSchema: { type: 'object', properties: { v: { anyOf: [{ type: 'string' }, { type: 'integer' }] } } } },
    whoamiTool,
  ];
}

function call(id, name, a, meta) {
  switch (name) {
    case 'meta': return reply(id, text(JSON.stringify(meta || {})));
    case 'echo':
      // Before the reply: progress, a reply to an id nobody asked, a sampling request, a ping.
      send({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'x', progress: 1 } });
      send({ jsonrpc: '2.0', id: 987654, result: { stray: true } });
      send({ jsonrpc: '2.0', id: 'srv-1', method: 'sampling/createMessage', params: {} });
      send({ jsonrpc: '2.0', id: 'srv-2', method: 'ping' });
      return reply(id, text('echo: ' + a.message));
    case 'structured':
      return reply(id, { content: [], structuredContent: { temperature: 21, conditions: 'sunny' } });
    case 'fail': return reply(id, text('it went wrong', true));
    case 'write_note':
      fs.writeFileSync('note.txt', a.message);
      return reply(id, text('wrote note.txt'));
    case 'big': return reply(id, text('x'.repeat(10 * 1024 * 1024)));
    case 'hang': return;  // the answer never comes
    case 'crash': process.exit(3);
    case 'read_path':
      try { return reply(id, text(fs.readFileSync(a.path, 'utf8'))); }
      catch (e) { return reply(id, text('refused: ' + e.code, true)); }
    case 'connect': {
      const socket = net.connect({ host: a.host, port: a.port });
      socket.setTimeout(3000);
      socket.on('connect', () => { socket.destroy(); reply(id, text('connected')); });
      socket.on('timeout', () => { socket.destroy(); reply(id, text('refused: timeout', true)); });
      socket.on('error', (e) => reply(id, text('refused: ' + e.code, true)));
      return;
    }
    case 'env': return reply(id, text('secret is ' + process.env.FAKE_SECRET));
    case 'whoami': return reply(id, whoami(process.env.FAKE_SECRET));
  }
  send({ jsonrpc: '2.0', id, error: { code: -32602, message: 'unknown tool ' + name } });
}

if (httpPort) {
  // Streamable HTTP, JSON replies: initialize, tools/list and tools/call of `whoami`.
  require('./mcp_http.js').serve(httpPort, (m, req, res) => {
    const auth = req.headers.authorization || '';
    const token = auth.startsWith('Bearer ') ? auth.slice(7) : '';
    let result;
    if (m.method === 'initialize') {
      result = { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} },
                 serverInfo: { name: 'fake', version: '1' } };
    } else if (m.method === 'tools/list') {
      result = { tools: [whoamiTool] };
    } else if (m.method === 'tools/call' && m.params.name === 'whoami') {
      result = whoami(token);
    }
    res.writeHead(200, { 'Mcp-Session-Id': 'fake-session', 'Content-Type': 'application/json' });
    res.end(JSON.stringify(result === undefined
      ? { jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'no ' + m.method } }
      : { jsonrpc: '2.0', id: m.id, result }));
  });
}

let buffer = '';
if (!httpPort) process.stdin.on('data', (chunk) => {
  buffer += chunk;
  let newline;
  while ((newline = buffer.indexOf('\n')) >= 0) {
    const line = buffer.slice(0, newline);
    buffer = buffer.slice(newline + 1);
    if (!line.trim()) continue;
    const m = JSON.parse(line);
    if (m.method === 'notifications/cancelled') {
      // Leaves a trace the test can see in the workspace.
      fs.appendFileSync('cancelled.txt', JSON.stringify(m.params) + '\n');
      continue;
    }
    if (m.id === undefined || m.method === undefined) continue;  // notifications, our replies
    if (m.method === 'initialize') {
      reply(m.id, { protocolVersion: forcedVersion || m.params.protocolVersion,
                    capabilities: { tools: { listChanged: true } },
                    serverInfo: { name: 'fake', version: '1' } });
    } else if (m.method === 'tools/list') {
      if (fs.existsSync('.schema_v2')) {
        send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
      }
      // Two pages: the cursor is the index to go on from.
      const all = tools();
      const start = m.params && m.params.cursor ? Number(m.params.cursor) : 0;
      const page = all.slice(start, start + 4);
      const result = { tools: page };
      if (start + 4 < all.length) result.nextCursor = String(start + 4);
      reply(m.id, result);
    } else if (m.method === 'tools/call') {
      if (malformed) { process.stdout.write('{"jsonrpc": "2.0", "id": oops\n'); continue; }
      call(m.id, m.params.name, m.params.arguments || {}, m.params._meta);
    } else {
      send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'no ' + m.method } });
    }
  }
});
if (!httpPort) process.stdin.on('end', () => process.exit(0));
