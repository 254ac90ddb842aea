/**
 * What clients that do not read make the service hold, measured: starts the service (a `dist/` folder, this one by
 * default; memory store, defaults otherwise), stores 1000 plants of the largest size (a page of all of them is about
 * 1.2 MB), then opens N connections (default 240) that each pipeline 16 such pages and never read. It samples the
 * service's RSS every 100 ms, first for 10 s with one such client, then for 20 s with N, and prints one JSON line:
 * the page size, the growth over the idle service with one client and with N, and how many connections the
 * unsent-bytes bound (MAX_UNSENT_BYTES) closed. RSS counts what the process holds (the responses, and garbage not yet
 * collected); what the kernel's socket buffers hold is outside it. `test/edge/unread-responses.test.ts` asserts the
 * same at a 128 MiB heap.
 *
 *   node dist/bench/unsent-bound.js [N] [dist]
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../harness/servers.js';

const count = Number(process.argv[2] ?? 240);
const dist = resolve(process.argv[3] ?? join(dirname(fileURLToPath(import.meta.url)), '..'));
const TOKEN = 'unsent-bound-token';

const rssMiB = (pid: number): number =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const port = await freePort();
const child = spawn(process.execPath, [join(dist, 'bootstrap/main.js')], {
  env: {
    PATH: process.env['PATH'] ?? '',
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    AUTH_TOKENS: JSON.stringify([{ token: TOKEN, owner: 'o', subject: 's', scopes: ['plants:read', 'plants:write'] }]),
  },
  stdio: ['ignore', 'pipe', 'inherit'],
});
let logged = '';
child.stdout.on('data', (chunk: Buffer) => (logged += chunk.toString()));
process.on('exit', () => child.kill('SIGKILL'));
for (let i = 0; ; i++) {
  try {
    if ((await fetch(`http://127.0.0.1:${port}/healthz`)).status === 200) break;
  } catch {
    if (i > 100) throw new Error('the service did not start');
    await sleep(100);
  }
}
const base = `http://127.0.0.1:${port}`;
const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
const name = '🌿'.repeat(200);
const tag = '🌿'.repeat(100);
for (let id = 1; id <= 1000; id++) {
  const res = await fetch(`${base}/plants`, { method: 'POST', headers, body: JSON.stringify({ id, name, tag }) });
  await res.arrayBuffer();
}
const page = Buffer.byteLength(await (await fetch(`${base}/plants?limit=1000`, { headers })).text());
const pid = child.pid as number;
await sleep(2000);
const idle = rssMiB(pid);

const get = `GET /plants?limit=1000 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`.repeat(16);
const sockets: Socket[] = [];
const open = (n: number): void => {
  for (let i = 0; i < n; i++) {
    const socket = connect(port, '127.0.0.1');
    socket.pause(); // never reads its responses
    socket.on('error', () => undefined);
    socket.on('connect', () => socket.write(get));
    sockets.push(socket);
  }
};
const peakOver = async (ms: number): Promise<number> => {
  let peak = 0;
  const started = Date.now();
  while (Date.now() - started < ms) {
    await sleep(100);
    peak = Math.max(peak, rssMiB(pid));
  }
  return peak;
};
open(1);
const one = await peakOver(10_000);
open(count - 1);
const many = await peakOver(20_000);
const closed = logged
  .split('\n')
  .filter((l) => l.includes('"code":"UNSENT_LIMIT"'))
  .reduce((sum, l) => sum + Number(/"closed":(\d+)/.exec(l)?.[1] ?? 0), 0);
process.stdout.write(
  JSON.stringify({
    node: process.versions.node,
    pageBytes: page,
    rssIdleMiB: Math.round(idle),
    oneClientGrowthMiB: Math.round((one - idle) * 10) / 10,
    connections: count,
    manyClientsGrowthMiB: Math.round(many - idle),
    closedForUnsent: closed,
  }) + '\n',
);
for (const s of sockets) s.destroy();
child.kill('SIGKILL');
process.exit(0);
