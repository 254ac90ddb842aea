/**
 * `node dist/bench/profile.js get|post [seconds]`: where the service's CPU goes per request. Starts the service as
 * the benchmark does (bootstrap/main.js, memory storage, a static token, pino at info to /dev/null, metrics on) under
 * `node --cpu-prof`, seeds it, warms it, drives one route with the benchmark's load generator, stops it, and reads
 * the profile: the process's CPU per request over the load (from /proc), and the profile's samples of the load
 * window by stage (each sample goes to the stage of the innermost frame that names one; a native frame such as
 * `writev` or `JSON.parse` belongs to the caller that named it), plus the heaviest functions by self time.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../harness/servers.js';
import { cpuSecondsOf } from './cpu.js';

const route = process.argv[2] === 'post' ? 'post' : 'get';
const seconds = Number(process.argv[3] ?? 10);
/** `--floor`: profile bench/floor-server.js instead, for comparison. */
const floor = process.argv.includes('--floor');
const dist = join(dirname(fileURLToPath(import.meta.url)), '..');
const TOKEN = 'bench-token';

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}
interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
  readonly children?: readonly number[];
}
interface Profile {
  readonly nodes: readonly ProfileNode[];
  readonly startTime: number;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** Stages, first match wins, tried on each frame from the sample's leaf to the root. */
const STAGES: ReadonlyArray<readonly [string, (f: CallFrame) => boolean]> = [
  [
    'log line (pino, sonic-boom)',
    (f) => /node_modules\/(pino|sonic-boom|quick-format|fast-redact|@pinojs)/.test(f.url),
  ],
  ['metrics (prom-client)', (f) => /node_modules\/(prom-client|tdigest|bintrees)/.test(f.url)],
  [
    'routing, URL and query (polka)',
    (f) => /node_modules\/(polka|@polka|trouter|regexparam)|node:querystring/.test(f.url),
  ],
  ['io-ts, fp-ts', (f) => /node_modules\/(io-ts|fp-ts)/.test(f.url)],
  ['token hashing and lookup', (f) => /static-token-verifier|node:crypto|internal\/crypto/.test(f.url)],
  ['storage (memory, sorted-btree)', (f) => /memory-plant-repository|sorted-btree/.test(f.url)],
  [
    'JSON body (read, pre-scan, parse)',
    (f) => /adapters\/http\/(json|body)\.js|lossless-json|node:internal\/encoding/.test(f.url),
  ],
  ['field rules, codecs, cursor', (f) => /adapters\/http\/(codecs|cursor)\.js|\/domain\//.test(f.url)],
  ['serialization (plant JSON)', (f) => /plant-json/.test(f.url)],
  ['response: headers, writeHead, end', (f) => /adapters\/http\/respond\.js/.test(f.url)],
  [
    'auth pipeline, use cases, handlers',
    (f) => /adapters\/http\/(pipeline|auth|handlers\/)|\/application\/|observed-backends|build-app/.test(f.url),
  ],
  ['edge: server limits, dispatch', (f) => /adapters\/http\/(server|app|request-id)\.js|bootstrap\/main/.test(f.url)],
  ['node:http (parse, request/response objects)', (f) => /node:_http|node:internal\/http|_http_/.test(f.url)],
  [
    'socket I/O (net, streams, syscalls)',
    (f) => /node:net|node:internal\/(stream|streams|net)|stream_base/.test(f.url),
  ],
  [
    'event loop, promises, timers',
    (f) => /node:internal\/(process|timers|async_hooks)|node:timers|node:events|node:internal\/events/.test(f.url),
  ],
  ['garbage collection', (f) => f.functionName === '(garbage collector)'],
];

const run = async () => {
  const profDir = mkdtempSync(join(tmpdir(), 'plant-store-prof-'));
  const port = await freePort();
  const service = spawn(
    process.execPath,
    [
      '--cpu-prof',
      `--cpu-prof-dir=${profDir}`,
      ...(floor ? [join(dist, 'bench/floor-server.js'), String(port), TOKEN] : [join(dist, 'bootstrap/main.js')]),
    ],
    {
      env: {
        PATH: process.env['PATH'] ?? '',
        PORT: String(port),
        HOST: '127.0.0.1',
        LOG_LEVEL: process.env['LOG_LEVEL'] ?? 'info',
        AUTH_TOKENS: JSON.stringify([
          { token: TOKEN, owner: 'bench', subject: 'bench', scopes: ['plants:read', 'plants:write'] },
        ]),
        MAX_PLANTS_PER_OWNER: '1000000000',
        MEMORY_MAX_PLANTS: '1000000000',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).status < 500) break;
    } catch {
      if (i > 100) throw new Error('the service did not start');
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  for (let id = 0; id < 1000; id++) {
    const res = await fetch(`http://127.0.0.1:${port}/plants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: `{"id":${id},"name":"plant ${id}","tag":"seed"}`,
    });
    await res.arrayBuffer();
  }
  const drive = (secs: number, firstId: number) =>
    new Promise<{ requests: number }>((resolve, reject) => {
      const spec = {
        url: `http://127.0.0.1:${port}${route === 'get' ? '/plants?limit=20' : '/plants'}`,
        token: TOKEN,
        method: route === 'get' ? 'GET' : 'POST',
        seconds: secs,
        connections: 32,
        firstId,
      };
      const child = spawn(process.execPath, [join(dist, 'bench/load.js'), JSON.stringify(spec)], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let out = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString()));
      child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`load exited ${code}`))));
    });
  await drive(3, 1_000_000);
  const cpuBefore = cpuSecondsOf(service.pid) ?? 0;
  const t0 = Date.now();
  const { requests } = await drive(seconds, 1_000_000_000);
  const t1 = Date.now();
  const cpuUs = (((cpuSecondsOf(service.pid) ?? 0) - cpuBefore) * 1e6) / requests;
  const exited = new Promise((r) => service.once('exit', r));
  service.kill('SIGTERM');
  await exited;

  const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
  if (file === undefined) throw new Error('no profile written');
  const profile = JSON.parse(readFileSync(join(profDir, file), 'utf8')) as Profile;
  rmSync(profDir, { recursive: true, force: true });

  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

  // The load window in profile time: the last `seconds` of samples before the process stopped serving, located from
  // the end (the process exits right after the load, so the tail of the profile is the load).
  let t = profile.startTime;
  const times = profile.timeDeltas.map((d) => (t += d));
  const end = times[times.length - 1] ?? 0;
  const from = end - (t1 - t0) * 1000;

  const stageUs = new Map<string, number>();
  const selfUs = new Map<string, number>();
  let total = 0;
  for (let i = 1; i < profile.samples.length; i++) {
    const at = times[i] ?? 0;
    if (at < from) continue;
    const dt = profile.timeDeltas[i] ?? 0;
    const leaf = byId.get(profile.samples[i] as number);
    if (leaf === undefined || leaf.callFrame.functionName === '(idle)') continue;
    total += dt;
    let stage = 'other (program, unattributed native)';
    for (let id: number | undefined = leaf.id; id !== undefined; id = parent.get(id)) {
      const frame = (byId.get(id) as ProfileNode).callFrame;
      const hit = STAGES.find(([, test]) => test(frame));
      if (hit !== undefined) {
        stage = hit[0];
        break;
      }
    }
    stageUs.set(stage, (stageUs.get(stage) ?? 0) + dt);
    const f = leaf.callFrame;
    const name = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(node_modules|dist)\//, '')}:${f.lineNumber + 1}`;
    selfUs.set(name, (selfUs.get(name) ?? 0) + dt);
  }
  console.log(
    `${route.toUpperCase()} ${route === 'get' ? '/plants?limit=20' : '/plants'}: ${requests} requests in ${seconds} s, ` +
      `${cpuUs.toFixed(1)} µs CPU per request (process, /proc), profile samples cover ${(total / 1e6).toFixed(2)} s busy`,
  );
  const perRequest = (us: number) => ((us / total) * cpuUs).toFixed(1).padStart(6);
  console.log('\nby stage (share of busy samples, and that share of the CPU per request):');
  for (const [stage, us] of [...stageUs].sort((a, b) => b[1] - a[1])) {
    console.log(`  ${stage.padEnd(46)} ${((100 * us) / total).toFixed(1).padStart(5)} %  ${perRequest(us)} µs`);
  }
  console.log('\nheaviest functions by self time:');
  for (const [name, us] of [...selfUs].sort((a, b) => b[1] - a[1]).slice(0, 30)) {
    console.log(`  ${((100 * us) / total).toFixed(1).padStart(5)} %  ${perRequest(us)} µs  ${name}`);
  }
};

await run();
