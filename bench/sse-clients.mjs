// SSE subscribers in their own process: opens N streams, timestamps each delivery, reports once.
// argv: url count seconds
import { request } from 'node:http';

const [url, count, seconds] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4])];
const now = () => performance.timeOrigin + performance.now();
const latencies = [];
let connected = 0;
let delivered = 0;

for (let i = 0; i < count; i++) {
  const req = request(url + '/api/events/stream', { agent: false }, (res) => {
    res.setEncoding('utf8');
    let buffer = '';
    connected++;
    if (connected === count) process.stdout.write('READY\n');
    res.on('data', (chunk) => {
      buffer += chunk;
      let end;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const message = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        for (const line of message.split('\n')) {
          if (!line.startsWith('data: ')) continue;
          const at = now();
          for (const e of JSON.parse(line.slice(6))) {
            latencies.push(at - e.data.sentAt);
            delivered++;
          }
        }
      }
    });
  });
  req.on('error', (err) => {
    process.stderr.write(`stream ${i}: ${err.message}\n`);
  });
  req.end();
}

process.stdin.on('data', () => {
  latencies.sort((a, b) => a - b);
  const pct = (p) => latencies[Math.min(latencies.length - 1, Math.ceil((p / 100) * latencies.length) - 1)] ?? NaN;
  process.stdout.write(JSON.stringify({ connected, delivered, p50: pct(50), p99: pct(99), max: latencies.at(-1) }) + '\n');
  process.exit(0);
});
setTimeout(() => process.exit(2), (seconds + 120) * 1000);
