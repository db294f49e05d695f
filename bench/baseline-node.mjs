// The physical limit for a JS server here: read the body, JSON.parse it, answer {accepted, rejected}.
import { createServer } from 'node:http';

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString());
    const n = Array.isArray(body.events) ? body.events.length : 1;
    const out = JSON.stringify({ accepted: n, rejected: 0 });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out) });
    res.end(out);
  });
});
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${server.address().port}`));
process.on('SIGTERM', () => process.exit(0));
