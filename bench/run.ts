/**
 * `npm run bench`: the service's CPU per request beside a bare floor, the contract floor and a Fastify peer, on every
 * runtime found (bench/side-by-side.ts), then the other figures of docs/performance.md, on this machine.
 * `npm run bench -- --smoke`: the same steps, short and small, to prove the benchmark still works (asserts no times):
 * each load is a fixed number of requests instead of a length of time, with no warm-up, and after each load on the
 * service a `count` line gives what the load generator sent, had answered and had answered 2xx, beside what the
 * service counted for that route (its http_requests_total, by status).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { closeRedis, redisConnection, whenReady } from '../adapters/redis/connection.js';
import { encodeCursor } from '../adapters/http/api/codecs.js';
import { redisTokenStore } from '../adapters/tokens/redis/redis-token-store.js';
import { dist, median, runLoad, seed, serviceEnv, startServer, stopServer, TOKEN, type Load } from './harness.js';
import { jsonParseCost } from './json-parse.js';
import { lineUp, sideBySide } from './side-by-side.js';
import type { PlantId } from '../domain/plant.js';
import { freePort, redisBinary, startRedis } from '../harness/servers.js';

const smoke = process.argv.includes('--smoke');
/** `--side-by-side`: only the side-by-side step (GET and POST, every reference and runtime). */
const sideBySideOnly = process.argv.includes('--side-by-side');
const plan: {
  rounds: number;
  seconds: number;
  /** Smoke: each load sends this many requests, and is not timed. */
  amount?: number;
  /** Seconds of warm-up before each target is measured; 0: none. */
  warmup: number;
  connections: number;
  seed: number;
  scale: [number, number];
  probe: number;
  heapCount: number;
} = smoke
  ? {
      rounds: 1,
      seconds: 1,
      // Enough that each server's CPU time over a load is some clock ticks (10 ms each), so no figure is 0.
      amount: 2000,
      warmup: 0,
      connections: 16,
      seed: 100,
      scale: [1000, 20_000],
      probe: 200,
      heapCount: 20_000,
    }
  : {
      rounds: 5,
      seconds: 5,
      warmup: 3,
      connections: 32,
      seed: 10_000,
      scale: [1000, 1_000_000],
      probe: 5000,
      heapCount: 1_000_000,
    };

/** The service as operators run it: bootstrap/main.js, memory storage, pino at info with logs to /dev/null. */
const startService = async (extraEnv: Record<string, string> = {}) => {
  const port = await freePort();
  const env = { ...serviceEnv(port), ...extraEnv };
  return { port, child: await startServer([join(dist, 'bootstrap/main.js')], env, port) };
};

/** One load on a target, with the plan's duration, connections and (in a smoke run) amount. */
const load = (
  spec: {
    url: string;
    method: 'GET' | 'POST';
    token?: string;
    firstId?: number;
    probe?: number;
    seconds?: number;
  },
  server?: ChildProcess,
): Promise<Load> =>
  runLoad(
    {
      token: TOKEN,
      seconds: plan.seconds,
      connections: plan.connections,
      ...(plan.amount === undefined || spec.probe !== undefined ? {} : { amount: plan.amount }),
      ...spec,
    },
    server,
  );

/** The service's own count of the requests it answered on `route` for `method`, by status (http_requests_total). */
const countedBy = async (port: number, method: string, route: string): Promise<Map<string, number>> => {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const counts = new Map<string, number>();
  for (const [, labelText = '', value] of text.matchAll(/^http_requests_total\{([^}]*)\} (\S+)$/gm)) {
    const labels = new Map([...labelText.matchAll(/(\w+)="([^"]*)"/g)].map(([, k, v]) => [k, v]));
    if (labels.get('method') !== method || labels.get('route') !== route) continue;
    const status = labels.get('status') ?? '?';
    counts.set(status, (counts.get(status) ?? 0) + Number(value));
  }
  return counts;
};

/**
 * Smoke only: runs `run` (one load on the service at `port`) and prints the load generator's counts beside the
 * service's own for that route, counted before and after (the service is idle but for the load).
 */
const counted = async (
  label: string,
  port: number,
  method: 'GET' | 'POST',
  route: string,
  run: () => Promise<Load>,
): Promise<Load> => {
  if (!smoke) return run();
  const before = await countedBy(port, method, route);
  const l = await run();
  const after = await countedBy(port, method, route);
  const byStatus = [...after]
    .map(([status, n]) => [status, n - (before.get(status) ?? 0)] as const)
    .filter(([, n]) => n);
  const total = byStatus.reduce((sum, [, n]) => sum + n, 0);
  console.log(
    `  count  ${label} ${method} ${route}  sent ${l.sent}  answered ${l.requests}  2xx ${l.ok}  ` +
      `counted by the service ${total} (${byStatus.map(([s, n]) => `${s}: ${n}`).join(', ')})`,
  );
  return l;
};

const fmtCpu = (us: number | undefined) => (us === undefined ? '   n/a' : us.toFixed(1).padStart(6));
const fmt = (l: Load) =>
  `${l.rps.toFixed(0).padStart(7)} req/s  p50 ${String(l.p50).padStart(3)} ms  p99 ${String(l.p99).padStart(3)} ms  cpu ${fmtCpu(l.cpuUs)} µs/req${l.bad ? `  (${l.bad} non-2xx/errors)` : ''}`;
/** The median of the defined figures; undefined when there is none. */
const medianOf = (xs: Array<number | undefined>): number | undefined => {
  const defined = xs.filter((x): x is number => x !== undefined);
  return defined.length === 0 ? undefined : median(defined);
};

const listScaling = async () => {
  console.log(
    `\nlist latency against the owner's plant count (memory storage, GET limit=20 from the middle; ${plan.probe} sequential requests after as many to warm up)`,
  );
  const p50s: number[] = [];
  for (const count of plan.scale) {
    const port = await freePort();
    const child = await startServer(
      [join(dist, 'bench/seeded-service.js'), String(port), String(count), TOKEN],
      {},
      port,
    );
    const cursor = encodeCursor(BigInt(Math.floor(count / 2)) as PlantId);
    const l = await load({
      url: `http://127.0.0.1:${port}/plants?limit=20&cursor=${cursor}`,
      method: 'GET',
      probe: plan.probe,
    });
    p50s.push(l.p50);
    console.log(
      `  list p50 at ${String(count).padStart(9)} plants: ${l.p50.toFixed(3)} ms (p99 ${l.p99.toFixed(3)} ms)`,
    );
    await stopServer(child);
  }
  console.log(
    `  ratio p50 at ${plan.scale[1]} / at ${plan.scale[0]}: ${((p50s[1] ?? 0) / Math.max(p50s[0] ?? 1, 0.001)).toFixed(2)}`,
  );
};

const heap = async () => {
  const out = await new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, ['--expose-gc', join(dist, 'bench/heap.js'), String(plan.heapCount)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let text = '';
    child.stdout.on('data', (c: Buffer) => (text += c.toString()));
    child.on('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`heap exited ${code}`))));
  });
  const { count, bytesPerPlant } = JSON.parse(out) as { count: number; bytesPerPlant: number };
  console.log(`\nheap bytes per stored plant beyond its strings, at ${count} plants: ${bytesPerPlant.toFixed(0)}`);
};

const redisAuth = async () => {
  const binary = redisBinary();
  if ('skip' in binary) {
    console.log(`\nAUTH=redis: skipped (${binary.skip})`);
    return;
  }
  const server = await startRedis(binary.bin);
  const redis = redisConnection(server.uri, 2000);
  await whenReady(redis, 5000);
  const issued = await redisTokenStore(redis, { cacheTtlMs: 0 }).issue({
    owner: 'bench',
    subject: 'bench',
    scopes: ['plants:read', 'plants:write'],
  })();
  if (issued._tag === 'Left') throw new Error('could not issue a bench token');
  const token = issued.right;
  console.log(`\nAUTH=redis vs static, GET /plants?limit=20 (${plan.rounds} rounds)`);
  const targets = [
    { label: 'static       ', env: {}, token: TOKEN },
    { label: 'redis cache  ', env: { AUTH: 'redis', REDIS_URL: server.uri, TOKEN_CACHE_TTL_MS: '5000' }, token },
    { label: 'redis no cache', env: { AUTH: 'redis', REDIS_URL: server.uri, TOKEN_CACHE_TTL_MS: '0' }, token },
  ];
  const started = await Promise.all(targets.map((t) => startService(t.env)));
  await Promise.all(started.map((s, i) => seed(s.port, 100, targets[i]?.token)));
  for (const [i, t] of plan.warmup > 0 ? targets.entries() : []) {
    await load({
      url: `http://127.0.0.1:${started[i]?.port}/plants?limit=20`,
      method: 'GET',
      token: t.token,
      seconds: plan.warmup,
    });
  }
  const ratios: number[][] = [[], []];
  const cpus: Array<Array<number | undefined>> = [[], [], []];
  for (let round = 1; round <= plan.rounds; round++) {
    const results: Load[] = [];
    for (const [i, t] of targets.entries()) {
      const port = started[i]?.port ?? 0;
      results.push(
        await counted(t.label.trim(), port, 'GET', '/plants', () =>
          load({ url: `http://127.0.0.1:${port}/plants?limit=20`, method: 'GET', token: t.token }, started[i]?.child),
        ),
      );
    }
    results.forEach((r, i) => console.log(`  round ${round}  ${targets[i]?.label} ${fmt(r)}`));
    results.forEach((r, i) => cpus[i]?.push(r.cpuUs));
    const base = results[0] as Load;
    ratios[0]?.push((results[1] as Load).rps / base.rps);
    ratios[1]?.push((results[2] as Load).rps / base.rps);
  }
  console.log(`  median ratio redis(cache on)/static: ${median(ratios[0] ?? []).toFixed(2)}`);
  console.log(`  median ratio redis(cache off)/static: ${median(ratios[1] ?? []).toFixed(2)}`);
  const [staticCpu, cachedCpu, uncachedCpu] = cpus.map((xs) => medianOf(xs));
  console.log(
    `  median cpu per request: static ${fmtCpu(staticCpu).trim()} µs, redis cache on ${fmtCpu(cachedCpu).trim()} µs, cache off ${fmtCpu(uncachedCpu).trim()} µs (the service process only)`,
  );
  await Promise.all(started.map((s) => stopServer(s.child)));
  await closeRedis(redis);
  await server.dispose();
};

/**
 * What the run will take, from the plan: the timed loads, plus what each step costs around them on this VM (a load
 * process starting, a service starting and being seeded, 1,000,000 plants inserted for the scaling and heap steps).
 */
const expectedSeconds = (withRedis: boolean): number => {
  const LOAD_START = 0.7;
  const warmups = plan.warmup > 0 ? 1 : 0;
  // A load of an amount takes little beyond the load process's start.
  const loadSeconds = plan.amount === undefined ? plan.seconds : 0;
  const servers = lined.servers.length * lined.runtimes.length;
  const sideBySide = 2 * servers * (warmups * (plan.warmup + LOAD_START) + plan.rounds * (loadSeconds + LOAD_START));
  const starts = lined.runtimes.length * (3 + plan.seed / 2500);
  if (sideBySideOnly) return sideBySide + starts;
  const perPlant = 4e-6; // seconds to insert one plant in process
  const scaling = plan.scale.reduce((sum, n) => sum + 1 + n * perPlant + LOAD_START + plan.probe * 2 * 0.0003, 0);
  const heapStep = 1 + plan.heapCount * perPlant;
  const parse = smoke ? 0.5 : 4;
  const redis = withRedis
    ? 4 + 3 * warmups * (plan.warmup + LOAD_START) + plan.rounds * 3 * (loadSeconds + LOAD_START)
    : 0;
  return sideBySide + starts + scaling + heapStep + parse + redis;
};

const began = performance.now();
console.log(`plant-store bench${smoke ? ' (smoke: short and small, figures not meaningful)' : ''}`);
console.log(`machine: ${cpus().length} cores, ${cpus()[0]?.model ?? 'unknown cpu'}, node ${process.version}`);
const lined = lineUp(!smoke);
const expected = Math.round(expectedSeconds(!('skip' in redisBinary())));
console.log(
  `this run takes about ${expected >= 120 ? `${Math.round(expected / 60)} min` : `${expected} s`} (${expected} s expected)`,
);
const summaries = await sideBySide(
  {
    rounds: plan.rounds,
    each: plan.amount === undefined ? `${plan.seconds} s` : `${plan.amount} requests`,
    warmup: plan.warmup,
    seed: plan.seed,
    load: ({ name, port, child }, method, path, firstId) => {
      const run = () => load({ url: `http://127.0.0.1:${port}${path}`, method, firstId }, child);
      // Only the service counts what it answered (/metrics).
      return name === 'service' ? counted(name, port, method, '/plants', run) : run();
    },
    warm: (port, method, path) =>
      load({ url: `http://127.0.0.1:${port}${path}`, method, firstId: 900_000_000, seconds: plan.warmup }),
  },
  lined,
);
if (!sideBySideOnly) {
  await listScaling();
  await heap();
  jsonParseCost(smoke);
  await redisAuth();
}
for (const { runtime, route, service, ratios } of summaries) {
  console.log(`summary node ${runtime} ${route}: service ${service.toFixed(1)} µs/req; ${ratios}`);
}
console.log(`took ${Math.round((performance.now() - began) / 1000)} s`);
process.exit(0);
