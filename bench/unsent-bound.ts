/**
 * What clients that do not read make the service hold, measured: starts the service (a `dist/` folder, this one by
 * default; memory store, defaults otherwise) with bench/unsent-sampler.ts loaded, stores 1000 plants of the largest
 * size (a page of all of them is about 1.2 MB), then opens N connections (default 240) that each pipeline 16 such
 * pages and never read, for 20 s, then closes them and waits 5 s. It prints one JSON line: the page size, the peak of
 * each figure over the idle service (RSS; V8's heap, Buffers and other memory outside the heap; the bytes the unsent
 * bound counts; the bytes the sockets' streams hold), the same peaks at the full GCs the sampler runs each second
 * (live bytes: what the service holds, without garbage awaiting collection), RSS once the clients have gone (memory
 * the allocator kept), how many connections the bound (MAX_UNSENT_BYTES) closed, and how long a /healthz on a new
 * connection every 250 ms took meanwhile (median, max). What the kernel's socket buffers hold is outside RSS.
 *
 *   node dist/bench/unsent-bound.js [N] [dist]
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sleep, startServiceProcess } from './service-process.js';

const count = Number(process.argv[2] ?? 240);
const dist = resolve(process.argv[3] ?? join(dirname(fileURLToPath(import.meta.url)), '..'));
const TOKEN = 'unsent-bound-token';
const MiB = 1024 * 1024;

const samples = join(mkdtempSync(join(tmpdir(), 'unsent-')), 'samples.jsonl');
const svc = await startServiceProcess(
  dist,
  {
    UNSENT_SAMPLES: samples,
    AUTH_TOKENS: JSON.stringify([{ token: TOKEN, owner: 'o', subject: 's', scopes: ['plants:read', 'plants:write'] }]),
  },
  ['--expose-gc', '--import', join(dist, 'bench/unsent-sampler.js')],
);
const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
const name = '🌿'.repeat(200);
const tag = '🌿'.repeat(100);
for (let id = 1; id <= 1000; id++) {
  const res = await fetch(`${svc.base}/plants`, { method: 'POST', headers, body: JSON.stringify({ id, name, tag }) });
  await res.arrayBuffer();
}
const page = Buffer.byteLength(await (await fetch(`${svc.base}/plants?limit=1000`, { headers })).text());
await sleep(2000);

interface Sample {
  at: number;
  gc: boolean;
  rss: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
  unsent: number;
  streams: number;
}
const read = (): Sample[] =>
  readFileSync(samples, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Sample);
const idle = read()
  .filter((s) => s.gc)
  .at(-1) as Sample;
const from = (read().at(-1) as Sample).at;

const get = `GET /plants?limit=1000 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`.repeat(16);
const sockets: Socket[] = [];
for (let i = 0; i < count; i++) {
  const socket = connect(svc.port, '127.0.0.1');
  socket.pause(); // never reads its responses
  socket.on('error', () => undefined);
  socket.on('connect', () => socket.write(get));
  sockets.push(socket);
}
// A probe's /healthz on a new connection every 250 ms meanwhile: how long it waits for its turn.
const probes: number[] = [];
for (const until = performance.now() + 20_000; performance.now() < until; await sleep(250)) {
  const at = performance.now();
  await (await fetch(`${svc.base}/healthz`, { headers: { connection: 'close' } })).text();
  probes.push(performance.now() - at);
}
for (const s of sockets) s.destroy();
await sleep(5000);

const run = read().filter((s) => s.at > from);
const keys = ['rss', 'heapUsed', 'external', 'arrayBuffers', 'unsent', 'streams'] as const;
const peaks = (of: Sample[]) =>
  Object.fromEntries(
    keys.map((k) => [
      k,
      Math.round((Math.max(...of.map((s) => s[k])) - (k === 'unsent' || k === 'streams' ? 0 : idle[k])) / MiB),
    ]),
  );
const last = run.filter((s) => s.gc).at(-1) as Sample;
const closed = svc
  .logged()
  .split('\n')
  .filter((l) => l.includes('"code":"UNSENT_LIMIT"'))
  .reduce((sum, l) => sum + Number(/"closed":(\d+)/.exec(l)?.[1] ?? 0), 0);
process.stdout.write(
  JSON.stringify({
    node: process.versions.node,
    connections: count,
    pageBytes: page,
    idleMiB: { rss: Math.round(idle.rss / MiB), heapUsed: Math.round(idle.heapUsed / MiB) },
    peakOverIdleMiB: peaks(run),
    peakOverIdleAtGcMiB: peaks(run.filter((s) => s.gc)),
    afterClientsGoneMiB: {
      rss: Math.round((last.rss - idle.rss) / MiB),
      heapUsed: Math.round((last.heapUsed - idle.heapUsed) / MiB),
    },
    closedForUnsent: closed,
    healthzMs: {
      median: Math.round(probes.sort((a, b) => a - b)[probes.length >> 1] ?? 0),
      max: Math.round(Math.max(...probes)),
    },
  }) + '\n',
);
svc.child.kill('SIGKILL');
process.exit(0);
