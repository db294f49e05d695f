import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
const url = process.argv[2];
const port = 18000 + Math.floor(Math.random() * 1000);
const child = spawn(process.execPath, ['--import', 'tsx', 'server.ts'], { env: { ...process.env, PORT: String(port), SERVICE_STORAGE: 'postgres', DATABASE_URL: url, SERVICE_RATE_LIMIT: '0', SERVICE_RETENTION_DAYS: '0', SERVICE_AUTH_MODE: 'header' }, stdio: ['ignore', 'pipe', 'pipe'] });
child.stderr.on('data', (d) => process.stderr.write(d));
const rss = () => { const s = readFileSync(`/proc/${child.pid}/status`, 'utf8'); return [/VmRSS:\s+(\d+)/.exec(s)![1], /VmHWM:\s+(\d+)/.exec(s)![1]].map((k) => Math.round(+k / 1024)); };
for (;;) { try { const r = await fetch(`http://127.0.0.1:${port}/api/health`); if (r.status < 500) break; } catch {} await new Promise((r) => setTimeout(r, 300)); }
console.log('started', rss()); await new Promise((r) => setTimeout(r, Number(process.env.WAIT ?? 0)));  console.log('waited', rss());
const H = { 'x-idp-user-id': 'busy-user' };
const iso = (ms: number) => new Date(ms).toISOString();
for (let round = 0; round < 3; round++) {
  for (const p of [...(process.env.FROM ? [`/api/stats?from=${process.env.FROM}`] : []), `/api/stats?from=${iso(Date.now() - 30 * 86400000)}`, `/api/stats?from=${iso(Date.now() - 3600000)}`, `/api/stats?from=${iso(Date.now() - 7 * 86400000)}&interval=day`, '/api/stats']) {
    const t = performance.now(); const r = await fetch(`http://127.0.0.1:${port}${p}`, { headers: H }); await r.text(); console.log(r.status, (performance.now() - t).toFixed(0), p.slice(0, 40), rss());
  }
  console.log('after reads', round, rss());
}
child.kill('SIGTERM');
