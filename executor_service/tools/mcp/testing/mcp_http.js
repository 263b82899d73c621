// Streamable HTTP for the test MCP servers: each POSTed JSON-RPC request is handed to
// `answer(message, request, response)`, which writes the response (headers included);
// notifications and replies get 202, DELETE (the end of a session) 200.
'use strict';
const http = require('http');

exports.serve = (port, answer) => {
  http.createServer((req, res) => {
    if (req.method === 'DELETE') { res.writeHead(200); res.end(); return; }
    let body = '';
    req.on('data', (chunk) => { body += chunk; });
    req.on('end', () => {
      const m = JSON.parse(body);
      if (m.id === undefined || m.method === undefined) { res.writeHead(202); res.end(); return; }
      answer(m, req, res);
    });
  }).listen(Number(port), '127.0.0.1');
};
