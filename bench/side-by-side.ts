/**
 * `npm run bench`'s first step: the service's server CPU per request beside three reference servers, on every
 * runtime found, GET /plants?limit=20 and POST /plants, the servers driven in turn round by round (service, floor,
 * contract floor, peer, service, ...), so that whatever else the machine does touches each round's servers alike.
 * - floor: bench/floor-server.ts, a bare node:http server doing the least the job needs;
 * - contract floor: `contract-floor-server.mjs` of the reference servers (BENCH_REFERENCES, by default
 *   ../shared/bench beside the project), the floor plus only what the contract forces;
 * - peer: their `peer-fastify/server.mjs`, the contract on Fastify, installed once with `npm ci` into a copy under
 *   the cache directory (the references may be read-only) by a full run; a smoke run uses it only when there.
 * Runtimes: BENCH_RUNTIMES (node binaries separated by `:`), by default the node running the bench and each Node.js
 * 24 or 26 that scripts/install-node24.sh and install-node26.sh put in the cache directory. Each server runs on the
 * runtime measured; the load generator always on the bench's own node. A reference that is missing is said once and
 * left out; the ratios printed are each reference's CPU per request over the service's, per round, and their median.
 */
import { spawnSync, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from '../harness/servers.js';
import { dist, median, seed, serviceEnv, startServer, stopServer, TOKEN, type Load } from './harness.js';

const project = resolve(dist, '..');
const cache = join(process.env['XDG_CACHE_HOME'] ?? join(homedir(), '.cache'), 'plant-store');

/** A server to compare, by the arguments of the node that runs it; `skip` says why a reference is left out. */
type Target = { readonly name: string; readonly args: (port: number) => string[] } | { readonly skip: string };

/**
 * The Fastify peer from its copy in the cache, installed (or installed again when its lockfile changed) first when
 * `install` (a smoke run does not reach for the registry: it uses a copy already there, or leaves the peer out).
 */
const peer = (references: string, install: boolean): Target => {
  const source = join(references, 'peer-fastify');
  if (!existsSync(join(source, 'server.mjs'))) return { skip: `peer: no ${source}/server.mjs` };
  const copy = join(cache, 'peer-fastify');
  const lock = (dir: string) =>
    existsSync(join(dir, 'package-lock.json')) ? readFileSync(join(dir, 'package-lock.json'), 'utf8') : '';
  if (!existsSync(join(copy, 'node_modules')) || lock(copy) !== lock(source)) {
    if (!install) return { skip: `peer: not installed in ${copy} (a full \`npm run bench\` installs it)` };
    // Installed beside, then moved into place: a bench running at the same time sees the old copy or the new, whole.
    const fresh = `${copy}.${process.pid}`;
    rmSync(fresh, { recursive: true, force: true });
    cpSync(source, fresh, { recursive: true });
    const npm = spawnSync('npm', ['ci', '--no-audit', '--no-fund', '--ignore-scripts'], {
      cwd: fresh,
      encoding: 'utf8',
      timeout: 300_000,
    });
    if (npm.status !== 0) return { skip: `peer: npm ci in ${fresh} failed: ${npm.stderr.trim().slice(-300)}` };
    rmSync(copy, { recursive: true, force: true });
    try {
      renameSync(fresh, copy);
    } catch (e) {
      // Another bench moved its copy in first: that one serves.
      rmSync(fresh, { recursive: true, force: true });
      if (!existsSync(join(copy, 'node_modules'))) throw e;
    }
  }
  const server = join(copy, 'server.mjs');
  return { name: 'peer', args: () => [server] };
};

const targets = (install: boolean): Target[] => {
  const references = resolve(process.env['BENCH_REFERENCES'] ?? join(project, '../shared/bench'));
  const floor = join(references, 'contract-floor-server.mjs');
  return [
    { name: 'service', args: () => [join(dist, 'bootstrap/main.js')] },
    { name: 'floor', args: (port) => [join(dist, 'bench/floor-server.js'), String(port), TOKEN] },
    existsSync(floor) ? { name: 'contract floor', args: () => [floor] } : { skip: `contract floor: no ${floor}` },
    peer(references, install),
  ];
};

/** The node binaries to measure on, each once (by version), the bench's own first. */
const runtimes = (): Array<{ readonly node: string; readonly version: string }> => {
  const listed = process.env['BENCH_RUNTIMES']?.split(':').filter((p) => p !== '');
  const installed = existsSync(cache)
    ? readdirSync(cache)
        .filter((d) => /^node-(24|26)\.\d+\.\d+$/.test(d))
        .map((d) => join(cache, d, 'bin/node'))
    : [];
  const found: Array<{ node: string; version: string }> = [];
  for (const node of listed ?? [process.execPath, ...installed.filter(existsSync)]) {
    const version = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout?.trim() ?? '';
    if (!/^v\d+/.test(version)) throw new Error(`runtime ${node}: not a node binary (BENCH_RUNTIMES, or the cache)`);
    if (!found.some((r) => r.version === version)) found.push({ node, version });
  }
  return found;
};

export interface Plan {
  readonly rounds: number;
  /** What one load is: `5 s`, or `2000 requests`. */
  readonly each: string;
  readonly warmup: number;
  readonly seed: number;
  /** One load on a server, measured (its CPU per request in `cpuUs`). */
  readonly load: (
    server: { readonly name: string; readonly port: number; readonly child: ChildProcess },
    method: 'GET' | 'POST',
    path: string,
    firstId: number,
  ) => Promise<Load>;
  /** A load that warms a server (JIT, connections) before anything is counted. */
  readonly warm: (port: number, method: 'GET' | 'POST', path: string) => Promise<unknown>;
}

const ROUTES = [
  ['GET /plants?limit=20', 'GET', '/plants?limit=20'],
  ['POST /plants', 'POST', '/plants'],
] as const;

const fmt = (l: Load) =>
  `${l.rps.toFixed(0).padStart(7)} req/s  p50 ${String(l.p50).padStart(3)} ms  p99 ${String(l.p99).padStart(3)} ms  cpu ${(l.cpuUs?.toFixed(1) ?? 'n/a').padStart(6)} µs/req${l.bad ? `  (${l.bad} non-2xx/errors)` : ''}`;

/** One line of the summary: a runtime's route, the service's CPU per request and each reference's ratio to it. */
export type Summary = {
  readonly runtime: string;
  readonly route: string;
  readonly service: number;
  readonly ratios: string;
};

/** The targets there are (a missing one said once), and the runtimes: what `sideBySide` will run. */
export const lineUp = (install: boolean) => {
  const all = targets(install);
  for (const t of all) if ('skip' in t) console.log(`side by side: ${t.skip} (left out)`);
  return {
    servers: all.filter((t): t is Exclude<Target, { skip: string }> => !('skip' in t)),
    runtimes: runtimes(),
  };
};

export const sideBySide = async (plan: Plan, { servers, runtimes: nodes }: ReturnType<typeof lineUp>) => {
  const summaries: Summary[] = [];
  for (const { node, version } of nodes) {
    const started: Array<{ readonly name: string; readonly port: number; readonly child: ChildProcess }> = [];
    for (const t of servers) {
      const port = await freePort();
      const env = { ...serviceEnv(port), PROJECT: project };
      started.push({ name: t.name, port, child: await startServer(t.args(port), env, port, node) });
    }
    await Promise.all(started.map((s) => seed(s.port, plan.seed)));
    for (const [label, method, path] of ROUTES) {
      console.log(
        `\nnode ${version} ${label} (${plan.rounds} rounds of ${plan.each} each, 32 connections, servers in turn: ${started.map((s) => s.name).join(', ')})`,
      );
      if (plan.warmup > 0) for (const s of started) await plan.warm(s.port, method, path);
      const cpu = started.map((): number[] => []);
      for (let round = 1; round <= plan.rounds; round++) {
        for (const [i, s] of started.entries()) {
          const l = await plan.load(s, method, path, 1_000_000_000 * round);
          cpu[i]?.push(l.cpuUs ?? NaN);
          const own =
            i === 0 ? '' : `  cpu ${s.name}/service ${((l.cpuUs ?? NaN) / (cpu[0]?.[round - 1] ?? NaN)).toFixed(2)}`;
          console.log(`  ${i === 0 ? `round ${round}` : '       '}  ${s.name.padEnd(14)} ${fmt(l)}${own}`);
        }
      }
      const [service = [], ...others] = cpu;
      const ratios = others.map((c, j) => {
        const name = started[j + 1]?.name ?? '';
        return `${name}/service ${median(c.map((x, round) => x / (service[round] ?? NaN))).toFixed(2)}`;
      });
      const line = { runtime: version, route: label, service: median(service), ratios: ratios.join(', ') };
      summaries.push(line);
      console.log(
        `  median cpu per request: service ${line.service.toFixed(1)} µs; ${line.ratios} (medians of the rounds' own ratios)`,
      );
    }
    await Promise.all(started.map((s) => stopServer(s.child)));
  }
  return summaries;
};
