// SSE subscribers in their own process: opens N streams, timestamps each delivery, reports once.
// argv: url count seconds
// Plain sockets, not node:http: on a 2-core machine this process shares the cores with the server,
// and node:http's parser and streams made it, not the server, the bottleneck of the measurement.
import { connect } from 'node:net';

const [url, count, seconds] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4])];
const { hostname, port } = new URL(url);
const now = () => performance.timeOrigin + performance.now();
// Only the publisher's timestamp is needed from each event; finding it is far cheaper than parsing.
const SENT_AT = /"sentAt":([\d.]+)/g;
const latencies = [];
let connected = 0;
let delivered = 0;

for (let i = 0; i < count; i++) {
  const socket = connect(Number(port), hostname, () => {
    socket.write(`GET /api/events/stream HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAccept: text/event-stream\r\n\r\n`);
  });
  socket.setEncoding('utf8');
  let head = true;
  let rest = '';
  socket.on('data', (chunk) => {
    let text = rest + chunk;
    if (head) {
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return void (rest = text);
      if (!text.startsWith('HTTP/1.1 200')) process.stderr.write(`stream ${i}: ${text.slice(0, text.indexOf('\r\n'))}\n`);
      head = false;
      text = text.slice(end + 4);
      if (++connected === count) process.stdout.write('READY\n');
    }
    // A timestamp may be cut by the end of a read: only whole lines are scanned, the tail waits. The
    // server writes whole SSE messages per chunk, so chunk-size lines only stand between messages.
    const cut = text.lastIndexOf('\n') + 1;
    rest = text.slice(cut);
    const at = now();
    SENT_AT.lastIndex = 0;
    const lines = text.slice(0, cut);
    for (let m; (m = SENT_AT.exec(lines)); ) {
      latencies.push(at - Number(m[1]));
      delivered++;
    }
  });
  socket.on('error', (err) => process.stderr.write(`stream ${i}: ${err.message}\n`));
}

process.stdin.on('data', () => {
  latencies.sort((a, b) => a - b);
  const pct = (p) => latencies[Math.min(latencies.length - 1, Math.ceil((p / 100) * latencies.length) - 1)] ?? NaN;
  process.stdout.write(JSON.stringify({ connected, delivered, p50: pct(50), p99: pct(99), max: latencies.at(-1) }) + '\n');
  process.exit(0);
});
setTimeout(() => process.exit(2), (seconds + 120) * 1000);
