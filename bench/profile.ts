/**
 * `node dist/bench/profile.js get|post [seconds] [--floor] [--cpu-prof] [--dist <dir>]`: where the service's CPU goes
 * per request. `--dist` profiles another build of the service (a `dist/` folder, say main's, for a before and after)
 * with this build's stages and load.
 * Starts the service as the benchmark does (bootstrap/main.js, memory storage, a static token, pino at info to
 * /dev/null, metrics on), seeds it with 1,000 plants, warms it, drives one route with the benchmark's load generator
 * (32 connections), and prints the process's CPU per request over the load (from /proc) split by stage, plus the
 * heaviest functions by self time. `--floor` profiles bench/floor-server.js instead.
 *
 * Two samplers. By default `perf record` (Linux perf, cpu-clock: a sample only while a thread of the process is on a
 * CPU, kernel included, every thread), with `node --perf-basic-prof` naming the JIT frames. With `--cpu-prof` (or
 * without perf) V8's own profiler: its samples are wall-clock intervals of the main thread, so on a loaded machine
 * a thread preempted (typically right after the `writev` that wakes the client) is charged to what it was doing;
 * shares from it overstate the syscalls. Each sample goes to the stage of the innermost frame that names one, so a
 * native frame (`writev`, `JSON.parse`, a hash) belongs to the JavaScript that called it.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../harness/servers.js';
import { cpuSecondsOf } from './cpu.js';
import { serviceEnv, TOKEN } from './service-env.js';

const route = process.argv[2] === 'post' ? 'post' : 'get';
const seconds = Math.max(4, Number(process.argv[3] ?? 10) || 10);
const floor = process.argv.includes('--floor');
const hasPerf = spawnSync('perf', ['--version']).status === 0;
const usePerf = hasPerf && !process.argv.includes('--cpu-prof');
const dist = join(dirname(fileURLToPath(import.meta.url)), '..');
const distAt = process.argv.indexOf('--dist');
const profiled =
  distAt > 0 && process.argv[distAt + 1] !== undefined ? resolve(process.argv[distAt + 1] as string) : dist;

/** Stages, tried on each frame (its function name and file, or its symbol and object) from the leaf up. */
const STAGES: ReadonlyArray<readonly [string, RegExp]> = [
  [
    'garbage collection',
    /\(garbage collector\)|v8::internal::(Heap|Scavenger|MarkCompact|ConcurrentMarking|Sweeper|MinorMarkCompact|GCTracer)|ScavengeObject|Builtins_RecordWrite/,
  ],
  [
    'log line (pino, its destination)',
    /node_modules\/(pino|sonic-boom|quick-format|fast-redact|@pinojs)|bootstrap\/logger/,
  ],
  ['metrics (prom-client, observed backends)', /node_modules\/(prom-client|tdigest|bintrees)|observability\//],
  ['routing, URL and query (polka)', /node_modules\/(polka|@polka|trouter|regexparam)|node:querystring/],
  ['io-ts, fp-ts', /node_modules\/(io-ts|fp-ts)/],
  ['edge: server limits, dispatch, request id', /internal\/crypto\/random/],
  ['token hashing and lookup', /static-token-verifier|node:crypto|internal\/crypto/],
  ['storage (memory, sorted-btree)', /memory-plant-repository|sorted-btree/],
  ['storage (MongoDB adapter)', /adapters\/storage\/mongodb\//],
  ['MongoDB driver, BSON', /node_modules\/(mongodb|bson)\//],
  [
    'JSON body (read, pre-scan, parse)',
    /adapters\/http\/server\/(json|json-text|body)\.js|lossless-json|internal\/encoding/,
  ],
  ['field rules, codecs, cursor, plant JSON', /adapters\/http\/api\/codecs\.js|\/domain\//],
  ['response: headers, writeHead (ours)', /adapters\/http\/(api\/(respond|failures)|server\/cors)\.js/],
  ['auth pipeline, use cases, handlers', /adapters\/http\/api\/(pipeline|auth|handlers\/)|\/application\/|build-app/],
  [
    'edge: server limits, dispatch, request id',
    /adapters\/http\/(transport\/|api\/(app|exact-dispatch|metrics)\.js)|bootstrap\/main/,
  ],
  [
    'socket I/O (net, streams, syscalls)',
    /node:net|internal\/(stream|streams|net)|stream_base|LibuvStreamWrap|uv__read|uv__write|\bwritev\b/,
  ],
  ['node:http (parser, request, response)', /node:_http|internal\/http|llhttp|Parser::|node:internal\/url/],
  [
    'event loop, promises, timers',
    /node:internal\/(process|timers|async_hooks)|node:timers|node:events|RunMicrotasks|uv_run/,
  ],
];

interface Sample {
  readonly frames: readonly string[]; // leaf first
  readonly weight: number;
}

const stageOf = (frames: readonly string[]): string => {
  for (const frame of frames) {
    const hit = STAGES.find(([, test]) => test.test(frame));
    if (hit !== undefined) return hit[0];
  }
  return 'other (V8, libc, unattributed native)';
};

const waitListening = async (port: number) => {
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).status < 500) return;
    } catch {
      if (i > 100) throw new Error('the server did not start');
      await new Promise((r) => setTimeout(r, 100));
    }
  }
};

const drive = (port: number, secs: number, firstId: number) =>
  new Promise<{ requests: number }>((resolve, reject) => {
    const spec = {
      url: `http://127.0.0.1:${port}${route === 'get' ? '/plants?limit=20' : '/plants'}`,
      token: TOKEN,
      method: route === 'get' ? 'GET' : 'POST',
      seconds: secs,
      // PROFILE_CONNECTIONS: fewer clients at once (with MongoDB storage, the creates one turn batches).
      connections: Number(process.env['PROFILE_CONNECTIONS'] ?? 32),
      firstId,
    };
    const child = spawn(process.execPath, [join(dist, 'bench/load.js'), JSON.stringify(spec)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`load exited ${code}`))));
  });

/** perf script's text: one block per sample, a header line then one frame per line (`addr symbol (object)`). */
const perfSamples = (text: string): Sample[] => {
  const samples: Sample[] = [];
  for (const block of text.split('\n\n')) {
    const lines = block.split('\n').filter((l) => l.trim() !== '');
    if (lines.length < 2) continue;
    const frames = lines.slice(1).map((l) =>
      l
        .trim()
        .replace(/^[0-9a-f]+ /, '')
        .replace(/\+0x[0-9a-f]+ /, ' '),
    );
    samples.push({ frames, weight: 1 });
  }
  return samples;
};

interface CpuProfile {
  readonly nodes: ReadonlyArray<{
    readonly id: number;
    readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
    readonly children?: readonly number[];
  }>;
  readonly startTime: number;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** V8's profile: the samples of the last `windowMs` before its end (the process stops right after the load). */
const cpuProfileSamples = (profile: CpuProfile, windowMs: number): Sample[] => {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  let t = profile.startTime;
  const times = profile.timeDeltas.map((d) => (t += d));
  const from = (times[times.length - 1] ?? 0) - windowMs * 1000;
  const samples: Sample[] = [];
  for (let i = 1; i < profile.samples.length; i++) {
    if ((times[i] ?? 0) < from) continue;
    const frames: string[] = [];
    for (let id: number | undefined = profile.samples[i]; id !== undefined; id = parent.get(id)) {
      const f = byId.get(id)?.callFrame;
      if (f !== undefined) frames.push(`${f.functionName || '(anonymous)'} ${f.url}:${f.lineNumber + 1}`);
    }
    if (frames[0]?.startsWith('(idle)')) continue;
    samples.push({ frames, weight: profile.timeDeltas[i] ?? 0 });
  }
  return samples;
};

const report = (samples: readonly Sample[], cpuUs: number) => {
  const total = samples.reduce((sum, s) => sum + s.weight, 0);
  const stages = new Map<string, number>();
  const leaves = new Map<string, number>();
  for (const s of samples) {
    const stage = stageOf(s.frames);
    stages.set(stage, (stages.get(stage) ?? 0) + s.weight);
    const leaf = (s.frames[0] ?? '?').replace(/file:\/\/|\/work\/[^ ]*?\/(node_modules|dist)\//g, '');
    leaves.set(leaf, (leaves.get(leaf) ?? 0) + s.weight);
  }
  const us = (w: number) => ((w / total) * cpuUs).toFixed(1).padStart(6);
  const pct = (w: number) => ((100 * w) / total).toFixed(1).padStart(5);
  console.log(`\nby stage (share of the samples, and that share of the CPU per request), ${samples.length} samples:`);
  for (const [stage, w] of [...stages].sort((a, b) => b[1] - a[1])) {
    console.log(`  ${stage.padEnd(46)} ${pct(w)} %  ${us(w)} µs`);
  }
  console.log('\nheaviest functions by self time:');
  for (const [name, w] of [...leaves].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env['TOP'] ?? 30))) {
    console.log(`  ${pct(w)} %  ${us(w)} µs  ${name.slice(0, 110)}`);
  }
};

const run = async () => {
  const workDir = mkdtempSync(join(tmpdir(), 'plant-store-prof-'));
  const port = await freePort();
  // PROFILE_NODE_FLAGS: more flags for the profiled process (e.g. --no-turbo-inlining, to see inlined functions).
  const extra = (process.env['PROFILE_NODE_FLAGS'] ?? '').split(' ').filter((f) => f !== '');
  const flags = usePerf
    ? ['--perf-basic-prof', '--interpreted-frames-native-stack']
    : ['--cpu-prof', `--cpu-prof-dir=${workDir}`];
  const server = spawn(
    process.execPath,
    [
      ...flags,
      ...extra,
      ...(floor ? [join(dist, 'bench/floor-server.js'), String(port), TOKEN] : [join(profiled, 'bootstrap/main.js')]),
    ],
    {
      env: {
        PATH: process.env['PATH'] ?? '',
        ...serviceEnv(port),
        LOG_LEVEL: process.env['LOG_LEVEL'] ?? 'info',
        // PROFILE_ENV: more of the service's environment, as JSON (e.g. STORAGE=mongodb and MONGODB_URI).
        ...(JSON.parse(process.env['PROFILE_ENV'] ?? '{}') as Record<string, string>),
      },
      stdio: ['ignore', 'ignore', 'inherit'],
      cwd: workDir, // V8 writes its isolate logs for perf here, and they go with it
    },
  );
  await waitListening(port);
  for (let id = 0; id < 1000; id++) {
    const res = await fetch(`http://127.0.0.1:${port}/plants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: `{"id":${id},"name":"plant ${id}","tag":"seed"}`,
    });
    await res.arrayBuffer();
  }
  await drive(port, 3, 1_000_000);

  const cpuBefore = cpuSecondsOf(server.pid) ?? 0;
  const started = Date.now();
  const load = drive(port, seconds, 1_000_000_000);
  let perfData = '';
  if (usePerf) {
    // The middle of the load: from 1 s in to 1 s before its end.
    await new Promise((r) => setTimeout(r, 1000));
    perfData = join(workDir, 'perf.data');
    const perf = spawn(
      'perf',
      [
        'record',
        '-q',
        '-F',
        '2000',
        '-e',
        'cpu-clock',
        '-g',
        '-p',
        String(server.pid),
        '-o',
        perfData,
        '--',
        'sleep',
        String(seconds - 2),
      ],
      { stdio: ['ignore', 'ignore', 'inherit'] },
    );
    await new Promise((r) => perf.once('exit', r));
  }
  const { requests } = await load;
  const elapsed = Date.now() - started;
  const cpuUs = (((cpuSecondsOf(server.pid) ?? 0) - cpuBefore) * 1e6) / requests;
  const exited = new Promise((r) => server.once('exit', r));
  server.kill('SIGTERM');
  await exited;

  let samples: Sample[];
  if (usePerf) {
    const script = spawnSync('perf', ['script', '-i', perfData, '-F', 'comm,tid,ip,sym,dso'], {
      encoding: 'utf8',
      maxBuffer: 1 << 30,
    });
    samples = perfSamples(script.stdout);
    // PROFILE_KEEP=<file>: keep perf's text for a closer look.
    if (process.env['PROFILE_KEEP'] !== undefined) writeFileSync(process.env['PROFILE_KEEP'], script.stdout);
    rmSync(`/tmp/perf-${server.pid}.map`, { force: true });
  } else {
    const file = readdirSync(workDir).find((f) => f.endsWith('.cpuprofile'));
    if (file === undefined) throw new Error('no profile written');
    samples = cpuProfileSamples(JSON.parse(readFileSync(join(workDir, file), 'utf8')) as CpuProfile, elapsed);
  }
  rmSync(workDir, { recursive: true, force: true });
  console.log(
    `${floor ? 'floor' : 'service'} ${route === 'get' ? 'GET /plants?limit=20' : 'POST /plants'}: ${requests} requests in ${seconds} s, ` +
      `${cpuUs.toFixed(1)} µs CPU per request (the process, from /proc; profiling adds a little), sampled with ${usePerf ? 'perf (CPU time)' : 'node --cpu-prof (wall time)'}`,
  );
  report(samples, cpuUs);
};

await run();
