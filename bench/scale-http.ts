/**
 * `npm run bench:scale-http [-- --postgres] [--smoke] [--only a,b,c,d,e]`: the cases of `bench:scale` (issue 26)
 * through real service processes over HTTP. Each case starts the service as operators run it
 * (`node dist/bootstrap/main.js`, `STORAGE=mongodb`, pino at info, `MAX_PLANTS_PER_OWNER` the quota), 3 processes
 * (1 for b and e) on one FerretDB (SQLite handler, or PostgreSQL with `--postgres`), each owner with a token of its
 * own from a static token file (`AUTH_TOKENS_FILE`: an in-memory lookup, so that what is measured is storage, not a
 * token store). The clients send each request to the next process in turn, as a load balancer would. Between the
 * processes and FerretDB a command-counting proxy (command-proxy.ts) counts what they send: every command but the
 * driver's handshakes and heartbeats, `insert` into `plants` apart, `find`s, and by the client's appName (the
 * adapter's pools: `plant-store`, `plant-store-slots` for loads of an owner's slots, `plant-store-indexes`).
 *
 *   a. many owners: 8 times more active owners than a process's slot memory budget holds
 *      (`MONGODB_SLOTS_MEMORY_BYTES` sized as bench:scale sizes it, to hold 80 owners), chosen uniformly, by Zipf
 *      (s = 1) and round-robin, and, for reference, only the 80 held (what HTTP costs without the many owners);
 *      creates/s side by side with the bare driver's insertOne through the same proxy (half-second slices in turn,
 *      same collection, 16 clients each), commands, finds and loads per create, p50 latency, CPU per create (the
 *      services', from /proc, and this process's, beside a bare insert's: the HTTP side's ceiling). Fresh processes for each
 *      distribution, measured once each has created for the 80 owners its budget holds, its start-up work on the
 *      collection is done (the proxy saw none of its commands unanswered for 700 ms) and 8 s of creates through HTTP
 *      (and 4 s of bare inserts) have warmed both sides' code, uncounted;
 *   b. 1,000 owners first seen empty and grown through one process (round-robin, one plant each a pass): its heap
 *      used (`nodejs_heap_size_used_bytes` on its /metrics), read after a full GC (the service runs with
 *      `--heapsnapshot-signal`: a snapshot, which starts with a full GC, is taken just before each reading and then
 *      deleted) before and after the growth, against the budget; the growth is scaled down (100 plants an owner,
 *      not 10,000: 10^7 creates through HTTP would take hours here) and its cost per owner and per plant printed;
 *   c. replacing plants at the quota across 3 processes: delete through one, create through the next; commands per
 *      delete and per create, finds, creates answered 403 while there was room and how long until they stored;
 *   d. filling one owner from 0 to the quota across 3 processes, 16 clients: inserts per stored create, 503s;
 *   e. 120,000 plants (20 owners of 6,000) seeded before the first process starts (its indexes are built over them);
 *      then a restart: time until /readyz answers 200, then the 20 owners' first creates at once: 503s and the time
 *      until all stored.
 *
 * It ends with a table of the figures. `--smoke` runs every case small, in seconds (test/bench/scale-http-smoke.test.ts).
 * Throughput on a shared machine is noisy: compare ratios within one run (a's bare and HTTP slices alternate).
 */
import { randomInt, randomUUID } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MongoClient } from 'mongodb';
import { freePort } from '../harness/servers.js';
import { cpuSecondsOf } from './cpu.js';
import { addCounts, noCounts, startCommandProxy, type CommandCounts } from './command-proxy.js';
import { serviceEnv } from './service-env.js';
import { arg, bareInsert, benchStore, COLLECTION, ownerPickers, seedOwner } from './storage-bench.js';

const smoke = process.argv.includes('--smoke');
const only = new Set((arg('--only') ?? 'a,b,c,d,e').split(','));
const P = smoke
  ? {
      quota: 200,
      seconds: 0.5,
      rounds: 1,
      held: 4,
      seeded: 10,
      growOwners: 20,
      grow: 10,
      warmEach: 5,
      warmSeconds: 0.2,
      quietMs: 200,
      replacements: 10,
      restartOwners: 4,
      restartEach: 100,
    }
  : {
      quota: 10_000,
      seconds: 5,
      rounds: 2,
      held: 80,
      seeded: 100,
      growOwners: 1000,
      grow: 100,
      warmEach: 50,
      warmSeconds: 8,
      quietMs: 700,
      replacements: 300,
      restartOwners: 20,
      restartEach: 6000,
    };
const CLIENTS = 16;

/** Bytes the adapter weighs for one owner at the quota, as bench:scale sizes its budget (its state, or 64 a plant). */
const slots = (await import('../adapters/storage/mongodb/owner-slots.js')) as unknown as Record<string, unknown>;
const ownerBytes = (plants: number): number =>
  typeof slots['STATE_BYTES'] === 'number' ? slots['STATE_BYTES'] + Math.ceil(P.quota / 8) : 200 + plants * 64;

const { server, handler, client: admin } = await benchStore('scalehttp');
const proxy = await startCommandProxy(server.port);
const services = await proxy.entrance('service');
const bareEntrance = await proxy.entrance('bare');
const bareClient = new MongoClient(bareEntrance.uri);
const scratch = mkdtempSync(join(tmpdir(), 'scale-http-'));

const ms = (t0: number) => performance.now() - t0;
const fmt = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '-');
const int = (x: number) => Math.round(x).toLocaleString('en');
const mib = (bytes: number) => `${fmt(bytes / 2 ** 20, 1)} MiB`;
const sleep = (t: number) => new Promise((resolve) => setTimeout(resolve, t));

/** The figures for the closing table: case, what, value, target. */
const table: Array<[string, string, string, string]> = [];

// ---- the service processes ----------------------------------------------------------------------------------------

interface Service {
  readonly port: number;
  readonly child: ChildProcess;
  readonly exited: Promise<unknown>;
  /** Milliseconds from the spawn to /readyz answering 200. */
  readonly readyMs: number;
}

const dist = join(dirname(fileURLToPath(import.meta.url)), '..');
/** Whatever of the services still runs when this process exits, however it ends, is killed. */
const children = new Set<ChildProcess>();
process.once('exit', () => children.forEach((c) => c.kill('SIGKILL')));
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => process.exit(1));

const tokenOf = (owner: string) => `tk-${owner}`;

/** A static token file (`AUTH_TOKENS_FILE`) with one token per owner, each `tk-<owner>`. */
const tokenFile = (owners: readonly string[]): string => {
  const path = join(scratch, `tokens-${randomUUID().slice(0, 8)}.json`);
  writeFileSync(
    path,
    JSON.stringify(
      owners.map((owner) => ({
        token: tokenOf(owner),
        owner,
        subject: 'bench',
        scopes: ['plants:read', 'plants:write'],
      })),
    ),
  );
  return path;
};

/** One service process on `db`, through the proxy; resolves once /readyz answers 200. */
const startService = async (db: string, tokens: string, extra: Record<string, string> = {}): Promise<Service> => {
  const port = await freePort();
  const { PORT, HOST, LOG_LEVEL } = serviceEnv(port) as Record<'PORT' | 'HOST' | 'LOG_LEVEL', string>;
  const t0 = performance.now();
  const child = spawn(process.execPath, [join(dist, 'bootstrap/main.js')], {
    env: {
      PATH: process.env['PATH'] ?? '',
      PORT,
      HOST,
      LOG_LEVEL,
      STORAGE: 'mongodb',
      MONGODB_URI: services.uri,
      MONGODB_DB: db,
      AUTH: 'static',
      AUTH_TOKENS_FILE: tokens,
      MAX_PLANTS_PER_OWNER: String(P.quota),
      ...extra,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  const exited = new Promise((resolve) => child.once('exit', resolve)).then(() => children.delete(child));
  // The log is read and dropped, its last lines kept to say why a process did not start.
  let tail = '';
  const keep = (chunk: Buffer) => (tail = (tail + chunk.toString('utf8')).slice(-4000));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the service exited ${child.exitCode}: ${tail}`);
    if ((await get(port, '/readyz')) === 200) return { port, child, exited, readyMs: ms(t0) };
    if (ms(t0) > 300_000) throw new Error(`the service was not ready within 300 s: ${tail}`);
    await sleep(50);
  }
};

const startFleet = (n: number, db: string, tokens: string, extra: Record<string, string> = {}) =>
  Promise.all(Array.from({ length: n }, () => startService(db, tokens, extra)));

const stopService = async (s: Service) => {
  if (s.child.exitCode !== null || s.child.signalCode !== null) return;
  s.child.kill('SIGTERM');
  await s.exited;
};

const agent = new Agent({ keepAlive: true, maxSockets: 64 });

/**
 * One HTTP request; its status, or 0 when it got no answer. A request on a kept-alive connection that the service
 * closed as idle meanwhile (ECONNRESET on a reused socket) is sent again once, on a new connection, as Node's
 * documentation advises: that race is the client's, not a failure of the service.
 */
const call = (
  port: number,
  method: string,
  path: string,
  token?: string,
  body?: string,
  retry = true,
): Promise<number> =>
  new Promise((resolve) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        agent,
        timeout: 60_000,
        headers: {
          ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
          ...(body === undefined
            ? {}
            : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }),
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', () => resolve(0));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (e: NodeJS.ErrnoException) => {
      if (retry && req.reusedSocket && e.code === 'ECONNRESET') resolve(call(port, method, path, token, body, false));
      else resolve(0);
    });
    req.end(body);
  });
const get = (port: number, path: string) => call(port, 'GET', path);

let nextId = 1_000_000_000;
/** A create of a new plant for `owner` through `s`: its status. */
const create = (s: Service, owner: string) => {
  const id = nextId++;
  return call(s.port, 'POST', '/plants', tokenOf(owner), `{"id":${id},"name":"plant ${id}"}`);
};

/** The process's heap used (`nodejs_heap_size_used_bytes`) and resident set, from its /metrics. */
const memoryOf = async (s: Service) => {
  const text = await new Promise<string>((resolve, reject) =>
    request({ host: '127.0.0.1', port: s.port, path: '/metrics', agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve(body));
      res.on('error', reject);
    })
      .on('error', reject)
      .end(),
  );
  const metric = (name: string) => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? NaN);
  return { heapUsed: metric('nodejs_heap_size_used_bytes'), rss: metric('process_resident_memory_bytes') };
};

/**
 * The heap used after a full GC: SIGUSR2 makes the process (run with `--heapsnapshot-signal=SIGUSR2`) write a heap
 * snapshot, which V8 starts with a full GC; once its file appears, /metrics is asked (answered after the snapshot,
 * which holds the event loop) and the file deleted.
 */
const heapAfterGc = async (s: Service, dir: string) => {
  const before = new Set(readdirSync(dir));
  s.child.kill('SIGUSR2');
  let written: string | undefined;
  const t0 = performance.now();
  while ((written = readdirSync(dir).find((f) => !before.has(f))) === undefined) {
    if (ms(t0) > 60_000) throw new Error('no heap snapshot within 60 s');
    await sleep(20);
  }
  const memory = await memoryOf(s);
  rmSync(join(dir, written), { force: true });
  return memory;
};

// ---- the load -----------------------------------------------------------------------------------------------------

/** `CLIENTS` loops for `secs` (or until `op` answers undefined); how many answered true, tried, and the time taken. */
const drive = async (op: (n: number) => Promise<boolean | undefined>, secs: number) => {
  let n = 0;
  let ok = 0;
  let stop = false;
  const until = performance.now() + secs * 1000;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (!stop && performance.now() < until) {
        const done = await op(n++);
        if (done === undefined) stop = true;
        else if (done) ok++;
      }
    }),
  );
  return { ok, tried: n, ms: ms(t0) };
};

const quantile = (xs: number[], q: number) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? NaN;
};
const median = (xs: number[]) => quantile(xs, 0.5);

const tally = (statuses: Record<number, number>, status: number) => (statuses[status] = (statuses[status] ?? 0) + 1);
const others = (statuses: Record<number, number>) =>
  Object.entries(statuses)
    .filter(([s]) => s !== '200')
    .map(([s, n]) => `${n} ${s === '0' ? 'unanswered' : s}`)
    .join(', ') || 'none';

/** Waits for the services' start-up work (an index build, a scan) to end: nothing of theirs unanswered for a while (700 ms; 300 in a smoke run). */
const settled = () =>
  services.quiet(P.quietMs, 120_000).catch((e: unknown) => console.log(`  (${e instanceof Error ? e.message : e})`));

/** Each command's count, mean and longest time to its reply, as `name n mean/max ms`. */
const timings = (counts: CommandCounts) =>
  Object.entries(counts.answeredMs)
    .map(([name, t]) => `${name} ${t.n} ${fmt(t.total / t.n, 0)}/${fmt(t.max, 0)} ms`)
    .join(', ');

/** Only the entry `name` of a record (an empty record when it has none). */
const onlyEntry = <T>(record: Record<string, T>, name: string): Record<string, T> =>
  record[name] === undefined ? {} : { [name]: record[name] as T };

/** Loads of an owner's slots: the finds the adapter's pool for them (appName `plant-store-slots`) sent. */
const loadsOf = (counts: CommandCounts) => counts.byApp['plant-store-slots']?.['find'] ?? 0;

const seed = (db: string, owner: string, n: number) => seedOwner(admin.db(db).collection(COLLECTION), owner, n);
const dbName = (c: string) => `scalehttp_${c}_${randomUUID().slice(0, 8)}`;

// ---- the cases ----------------------------------------------------------------------------------------------------

const manyOwners = async () => {
  const db = dbName('a');
  const active = P.held * 8;
  const owners = Array.from({ length: active }, (_, i) => `owner-${i}`);
  for (const owner of owners) await seed(db, owner, P.seeded);
  const tokens = tokenFile(owners);
  const budget = P.held * ownerBytes(P.seeded);
  console.log(
    `a. ${active} active owners of ${P.seeded} plants, each process's slot memory budget holding ${P.held} (MONGODB_SLOTS_MEMORY_BYTES=${budget}); 3 processes; ${CLIENTS} clients, ${P.seconds} s a round`,
  );
  const collection = bareClient.db(db).collection(COLLECTION);
  const bare = (pick: () => number) => () => bareInsert(collection, `bare-${pick()}`, nextId++, 2000);

  let kept: Service[] | undefined;
  for (const [label, pickOf] of [
    // The reference: only the owners a process's budget holds, so what the others cost shows beside it.
    [`the ${P.held} held`, () => () => randomInt(P.held)],
    ...ownerPickers(active),
  ] as const) {
    // Fresh processes (a smoke run keeps the first ones, to be quick); each creates once for the owners its budget
    // holds (one load each, while it had room), then settles.
    const fleet = (kept ??= await startFleet(3, db, tokens, { MONGODB_SLOTS_MEMORY_BYTES: String(budget) }));
    await Promise.all(
      fleet.map(async (s) => {
        for (const owner of owners.slice(0, P.held)) await create(s, owner);
      }),
    );
    await settled();
    let turn = 0;
    // Fresh processes run their first thousands of requests in V8's interpreter and baseline code (twice the CPU a
    // create, measured): creates through HTTP and bare inserts for a few seconds, not counted, so that both sides are
    // measured at the steady state an operator's processes run at.
    {
      const bareOf = bare(pickOf());
      const pick = pickOf();
      await drive(
        () => create(fleet[turn++ % fleet.length] as Service, owners[pick()] as string).then((s) => s === 200),
        P.warmSeconds,
      );
      await drive(bareOf, P.warmSeconds / 2);
    }
    for (let round = 1; round <= P.rounds; round++) {
      const sum = { bare: { ok: 0, ms: 0 }, http: { ok: 0, ms: 0, tried: 0 } };
      const counts = noCounts();
      const bareCounts = noCounts();
      const statuses: Record<number, number> = {};
      const latencies: number[] = [];
      const bareOf = bare(pickOf());
      const pick = pickOf();
      // Slices of half a second, bare and HTTP in turn, so that a machine whose load changes weighs on both alike.
      // CPU seconds: this process's (the load and the proxy) in each kind of slice, the services' in HTTP slices.
      const cpu = { bare: 0, http: 0, services: 0 };
      const own = () => {
        const u = process.cpuUsage();
        return (u.user + u.system) / 1e6;
      };
      const servicesCpu = () => fleet.reduce((total, s) => total + (cpuSecondsOf(s.child.pid) ?? NaN), 0);
      for (let slice = 0; slice < P.seconds * 2; slice++) {
        bareEntrance.reset();
        let ownAt = own();
        const b = await drive(bareOf, 0.5);
        cpu.bare += own() - ownAt;
        addCounts(bareCounts, bareEntrance.reset());
        sum.bare.ok += b.ok;
        sum.bare.ms += b.ms;
        services.reset();
        ownAt = own();
        const servicesAt = servicesCpu();
        const h = await drive(async () => {
          const t0 = performance.now();
          const status = await create(fleet[turn++ % fleet.length] as Service, owners[pick()] as string);
          latencies.push(ms(t0));
          tally(statuses, status);
          return status === 200;
        }, 0.5);
        cpu.services += servicesCpu() - servicesAt;
        cpu.http += own() - ownAt;
        addCounts(counts, services.reset());
        sum.http.ok += h.ok;
        sum.http.tried += h.tried;
        sum.http.ms += h.ms;
      }
      const bareRate = sum.bare.ok / (sum.bare.ms / 1000);
      const rate = sum.http.ok / (sum.http.ms / 1000);
      const perCreate = counts.commands / sum.http.tried;
      console.log(
        `  ${label}, round ${round}: bare ${fmt(bareRate, 0)}/s (${fmt(bareCounts.commands / sum.bare.ok)} commands per insert), HTTP ${fmt(rate, 0)}/s (${fmt(rate / bareRate)} of bare), ${fmt(perCreate)} commands, ${fmt(counts.finds / sum.http.tried, 3)} finds (${counts.plantFinds} of plants: ${timings({ ...counts, answeredMs: onlyEntry(counts.answeredMs, 'find plants') }) || 'none'}) and ${fmt(loadsOf(counts) / sum.http.tried, 3)} loads per create, p50 ${fmt(median(latencies), 1)} ms, p99 ${fmt(quantile(latencies, 0.99), 0)} ms, max ${fmt(quantile(latencies, 1), 0)} ms; CPU per create: the services ${fmt((cpu.services / sum.http.tried) * 1e6, 0)} µs, this process ${fmt((cpu.http / sum.http.tried) * 1e6, 0)} µs (${fmt((cpu.bare / sum.bare.ok) * 1e6, 0)} µs per bare insert); not 200: ${others(statuses)}; ${JSON.stringify(counts.byApp)}`,
      );
      if (round === P.rounds)
        table.push(
          [
            `a ${label}`,
            'creates/s, HTTP / bare',
            `${fmt(rate, 0)} / ${fmt(bareRate, 0)} = ${fmt(rate / bareRate)} (services' CPU ${fmt((cpu.services / sum.http.tried) * 1e6, 0)} µs a create)`,
            '>= 0.5',
          ],
          [
            `a ${label}`,
            'commands per create (finds, loads)',
            `${fmt(perCreate)} (${fmt(counts.finds / sum.http.tried, 3)}, ${fmt(loadsOf(counts) / sum.http.tried, 3)})`,
            '<= 2',
          ],
        );
    }
    if (!smoke) {
      await Promise.all(fleet.map(stopService));
      kept = undefined;
    }
  }
  await Promise.all((kept ?? []).map(stopService));
};

const growing = async () => {
  const db = dbName('b');
  const owners = Array.from({ length: P.growOwners }, (_, i) => `grow-${i}`);
  const warmOwners = Array.from({ length: 20 }, (_, i) => `warm-${i}`);
  const dir = mkdtempSync(join(scratch, 'heap-'));
  const [s] = await startFleet(1, db, tokenFile([...owners, ...warmOwners]), {
    NODE_OPTIONS: `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${dir}`,
  });
  const service = s as Service;
  const budget = 64 * 2 ** 20; // MONGODB_SLOTS_MEMORY_BYTES unset: the default
  // Warm: the code paths compiled, the pools open, the metrics' series made, before the first reading.
  const warm = await drive(
    async (n) =>
      n < P.warmEach * warmOwners.length
        ? (await create(service, warmOwners[n % warmOwners.length] as string)) === 200
        : undefined,
    600,
  );
  await settled();
  const before = await heapAfterGc(service, dir);
  const statuses: Record<number, number> = {};
  const total = P.growOwners * P.grow;
  let peak = 0;
  const sampler = setInterval(() => {
    memoryOf(service).then(
      (m) => (peak = Math.max(peak, m.heapUsed)),
      () => undefined,
    );
  }, 1000);
  const grown = await drive(async (n) => {
    if (n >= total) return undefined;
    const status = await create(service, owners[n % P.growOwners] as string);
    tally(statuses, status);
    return status === 200;
  }, 24 * 3600);
  clearInterval(sampler);
  await settled();
  const after = await heapAfterGc(service, dir);
  const growth = after.heapUsed - before.heapUsed;
  console.log(
    `b. ${P.growOwners} owners first seen empty, grown to ${P.grow} plants each through one process (round-robin; ${warm.ok} creates of ${warmOwners.length} other owners first): ${int(grown.ok)} stored, ${fmt(grown.ok / (grown.ms / 1000), 0)} creates/s, not 200: ${others(statuses)}; heap used after a full GC ${mib(before.heapUsed)} before, ${mib(after.heapUsed)} after: ${growth >= 0 ? '+' : ''}${mib(growth)} (${int(growth / P.growOwners)} bytes an owner, ${fmt(growth / grown.ok, 1)} a plant stored), the slot memory budget ${mib(budget)} (default); peak heap used sampled ${mib(peak)}, resident ${mib(before.rss)} before, ${mib(after.rss)} after`,
  );
  table.push([
    'b',
    `heap growth, ${P.growOwners} owners x ${P.grow} plants (budget ${mib(budget)})`,
    `${mib(growth)} (${int(growth / P.growOwners)} B/owner, ${fmt(growth / grown.ok, 1)} B/plant)`,
    'within the budget',
  ]);
  await stopService(service);
  rmSync(dir, { recursive: true, force: true });
};

const replacing = async () => {
  const db = dbName('c');
  const owner = 'full-owner';
  await seed(db, owner, P.quota);
  const fleet = await startFleet(3, db, tokenFile([owner]));
  // Each process has seen the owner (as a running service has): one create each, refused.
  for (const s of fleet) await create(s, owner);
  await settled();
  let deleteCommands = 0;
  let createCommands = 0;
  let refusedWithRoom = 0;
  let unavailable = 0;
  let longestMs = 0;
  const creates = noCounts();
  const deletes = noCounts();
  const t0 = performance.now();
  for (let i = 0; i < P.replacements; i++) {
    services.reset();
    const gone = await call((fleet[i % 3] as Service).port, 'DELETE', `/plants/${i}`, tokenOf(owner));
    if (gone !== 204) throw new Error(`plant ${i}: DELETE answered ${gone}`);
    const d = services.reset();
    deleteCommands += d.commands;
    addCounts(deletes, d);
    const started = performance.now();
    for (;;) {
      const status = await create(fleet[(i + 1) % 3] as Service, owner);
      if (status === 200) break;
      if (status === 403) refusedWithRoom++;
      else unavailable++;
      await sleep(10);
    }
    longestMs = Math.max(longestMs, ms(started));
    const c = services.reset();
    createCommands += c.commands;
    addCounts(creates, c);
  }
  const secs = ms(t0) / 1000;
  const n = P.replacements;
  console.log(
    `c. replacing plants at the quota (${P.quota}) across 3 processes, ${n} times: ${fmt(n / secs, 1)} replacements/s; per replacement ${fmt((deleteCommands + createCommands) / n)} commands (delete ${fmt(deleteCommands / n)}, create ${fmt(createCommands / n)}), ${fmt(creates.finds / n, 3)} finds and ${fmt(loadsOf(creates) / n, 3)} loads per create; ${refusedWithRoom} creates answered 403 while there was room, ${unavailable} not 200 otherwise; longest until stored ${fmt(longestMs, 0)} ms; the deletes' commands: ${JSON.stringify(deletes.byApp)}, the creates': ${JSON.stringify(creates.byApp)}`,
  );
  table.push(
    [
      'c',
      'commands per replacement (delete + create)',
      `${fmt((deleteCommands + createCommands) / n)} (${fmt(deleteCommands / n)} + ${fmt(createCommands / n)})`,
      '<= 3',
    ],
    [
      'c',
      'finds (loads) per create',
      `${fmt(creates.finds / n, 3)} (${fmt(loadsOf(creates) / n, 3)})`,
      'no read of the owner',
    ],
    [
      'c',
      `403 while room existed (of ${n}); longest until stored`,
      `${refusedWithRoom}; ${fmt(longestMs, 0)} ms`,
      'none past the documented bound',
    ],
    ['c', 'replacements/s', fmt(n / secs, 1), ''],
  );
  await Promise.all(fleet.map(stopService));
};

const filling = async () => {
  const db = dbName('d');
  const owner = 'filling-owner';
  const fleet = await startFleet(3, db, tokenFile([owner]));
  await settled();
  services.reset();
  const statuses: Record<number, number> = {};
  let stored = 0;
  let done = false;
  const collection = admin.db(db).collection(COLLECTION);
  const filled = await drive(async (n) => {
    if (done) return undefined;
    const status = await create(fleet[n % 3] as Service, owner);
    tally(statuses, status);
    if (status === 200) stored++;
    // A create answered 503 may have stored its plant: the owner is full when the collection says so.
    else if (status === 403) done ||= (await collection.countDocuments({ owner })) >= P.quota;
    return status === 200;
  }, 24 * 3600);
  const counts = services.reset();
  const kept = await collection.countDocuments({ owner });
  console.log(
    `d. filling one owner from 0 to ${P.quota} across 3 processes, ${CLIENTS} clients: ${fmt(stored / (filled.ms / 1000), 0)} creates/s, ${fmt(counts.plantDocuments / stored, 3)} inserts (${fmt(counts.plantInserts / stored, 3)} insert commands) per stored create, ${counts.finds} finds (${loadsOf(counts)} loads); not 200: ${others(statuses)} (${stored} answered 200, ${kept} stored); ${JSON.stringify(counts.byApp)}`,
  );
  table.push(
    [
      'd',
      'inserts (documents sent) per stored create; insert commands',
      `${fmt(counts.plantDocuments / stored, 3)}; ${fmt(counts.plantInserts / stored, 3)}`,
      '<= 1.5',
    ],
    ['d', '503s; finds (loads)', `${statuses[503] ?? 0}; ${counts.finds} (${loadsOf(counts)})`, 'no 503'],
    ['d', 'creates/s', fmt(stored / (filled.ms / 1000), 0), ''],
  );
  await Promise.all(fleet.map(stopService));
};

/** How long e's owners try before one counts as not stored. */
const GIVE_UP_MS = 120_000;

const restart = async () => {
  const db = dbName('e');
  const owners = Array.from({ length: P.restartOwners }, (_, i) => `restart-${i}`);
  for (const owner of owners) await seed(db, owner, P.restartEach);
  const tokens = tokenFile(owners);
  const plants = P.restartOwners * P.restartEach;
  const [first] = await startFleet(1, db, tokens);
  const t0 = performance.now();
  await settled();
  const firstSettledMs = (first as Service).readyMs + ms(t0);
  await stopService(first as Service);
  const [s] = await startFleet(1, db, tokens);
  const service = s as Service;
  const statuses: Record<number, number> = {};
  let firstUnavailable = 0;
  services.reset();
  const t1 = performance.now();
  const times = await Promise.all(
    owners.map(async (owner) => {
      for (let attempt = 0; ; attempt++) {
        const status = await create(service, owner);
        tally(statuses, status);
        if (status === 200) return ms(t1);
        if (attempt === 0) firstUnavailable++;
        if (ms(t1) > GIVE_UP_MS) return NaN;
      }
    }),
  );
  const stored = times.filter(Number.isFinite);
  const last = Math.max(...stored);
  const storedAfter =
    stored.length === times.length
      ? `the last stored after ${fmt(last, 0)} ms`
      : `${times.length - stored.length} not stored within ${GIVE_UP_MS / 1000} s (the last of the others after ${fmt(last, 0)} ms)`;
  const restarted = services.reset();
  console.log(
    `e. ${plants.toLocaleString('en')} plants seeded: the first process ready after ${fmt((first as Service).readyMs, 0)} ms, its start-up work done after ${fmt(firstSettledMs, 0)} ms; a restart ready after ${fmt(service.readyMs, 0)} ms; then ${P.restartOwners} owners' first creates at once: ${firstUnavailable} of ${P.restartOwners} first answers not 200, not 200 in all: ${others(statuses)}; ${storedAfter} (503s retried at once); the service's commands from the restart's ready on: ${JSON.stringify(restarted.byApp)}, answered in (mean/longest): ${timings(restarted)}`,
  );
  table.push(
    [
      'e',
      `restart over ${plants.toLocaleString('en')} plants: ready after`,
      `${fmt(service.readyMs / 1000, 1)} s (first start ${fmt((first as Service).readyMs / 1000, 1)} s)`,
      'within seconds',
    ],
    [
      'e',
      `${P.restartOwners} owners at once: first answers not 200; all stored after`,
      `${firstUnavailable}; ${storedAfter.replace(/^the last stored after /, '')}`,
      'no 503',
    ],
  );
  await stopService(service);
};

try {
  const load = loadavg().map((x) => fmt(x));
  console.log(
    `FerretDB ${handler}; the service from this build, through HTTP; load average ${load.join(' ')}${smoke ? '; smoke' : ''}`,
  );
  for (const [name, run] of [
    ['a', manyOwners],
    ['b', growing],
    ['c', replacing],
    ['d', filling],
    ['e', restart],
  ] as const) {
    if (!only.has(name)) continue;
    const t0 = performance.now();
    await run();
    console.log(`  (case ${name}: ${fmt(ms(t0) / 1000, 1)} s)`);
  }
  console.log(
    `\nFerretDB ${handler}, quota ${P.quota}, load average ${load.join(' ')} at the start, ${loadavg()
      .map((x) => fmt(x))
      .join(' ')} at the end\n`,
  );
  console.log('| case | figure | measured | target |');
  console.log('| ---- | ------ | -------- | ------ |');
  for (const row of table) console.log(`| ${row.join(' | ')} |`);
} finally {
  agent.destroy();
  await bareClient.close();
  const dbs = await admin.db().admin().listDatabases();
  for (const { name } of dbs.databases) if (name.startsWith('scalehttp_')) await admin.db(name).dropDatabase();
  await admin.close();
  await proxy.close();
  await server.dispose();
  rmSync(scratch, { recursive: true, force: true });
}
process.exit(0);
