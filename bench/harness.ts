/**
 * What the benches share: the service's environment and token, starting and stopping a server process, driving it
 * from a load process of its own (load.ts), and the server's own CPU time per request served.
 *
 * CPU time (user + system, every thread, from /proc/<pid>/stat on Linux) is what a server spent serving, whatever
 * else the machine was doing: load from other processes stretches wall time and req/s but hardly the CPU time a
 * request takes, so it is the figure to compare between rounds and runs.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** dist/, where the compiled benches and the service are. */
export const dist = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The bench's token, known to the service and the floor alike. */
export const TOKEN = 'bench-token';

/**
 * The environment the bench runs the service with (bootstrap/main.js): loopback, pino at info, one static token, and
 * the quota on (its code path is measured) but out of reach, since one owner creates every plant of a run.
 */
export const serviceEnv = (port: number): Record<string, string> => ({
  PORT: String(port),
  HOST: '127.0.0.1',
  LOG_LEVEL: 'info',
  AUTH_TOKENS: JSON.stringify([
    { token: TOKEN, owner: 'bench', subject: 'bench', scopes: ['plants:read', 'plants:write'] },
  ]),
  MAX_PLANTS_PER_OWNER: '10000000',
  MEMORY_MAX_PLANTS: '1000000000',
});

/** Clock ticks per second of /proc's times (USER_HZ): `getconf CLK_TCK`, 100 on every common Linux. */
const ticksPerSecond = ((): number => {
  const out = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
  const n = Number(out.stdout?.trim());
  return Number.isInteger(n) && n > 0 ? n : 100;
})();

/** CPU seconds the process has used so far, or undefined where /proc is not available (not Linux, or it exited). */
export const cpuSecondsOf = (pid: number | undefined): number | undefined => {
  if (pid === undefined) return undefined;
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may hold spaces; fields after it start with the state (3).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[14 - 3]);
  const stime = Number(fields[15 - 3]);
  return Number.isFinite(utime) && Number.isFinite(stime) ? (utime + stime) / ticksPerSecond : undefined;
};

const children: ChildProcess[] = [];
process.on('exit', () => children.forEach((c) => c.kill('SIGKILL')));
// Stopped by a signal: 'exit' then runs too, so the servers a bench started go with it.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(1));

/** Starts a server process (on `node`) and resolves once it answers /healthz on `port` (killed when the bench exits). */
export const startServer = async (
  args: string[],
  env: Record<string, string>,
  port: number,
  node = process.execPath,
): Promise<ChildProcess> => {
  const child = spawn(node, args, {
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.push(child);
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`${args.join(' ')} exited with ${child.exitCode}`);
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).status < 500) return child;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${args.join(' ')} did not start`);
};

export const stopServer = async (child: ChildProcess): Promise<void> => {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
};

/** Creates plants 0 to count - 1 for the bench's owner, 16 at a time. */
export const seed = async (port: number, count: number, token = TOKEN): Promise<void> => {
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const id = next++;
      const res = await fetch(`http://127.0.0.1:${port}/plants`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: `{"id":${id},"name":"plant ${id}","tag":"seed"}`,
      });
      if (res.status !== 200) throw new Error(`seeding answered ${res.status}`);
      await res.arrayBuffer();
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
};

/** What a load process reports, and the server's CPU time per request served over it. */
export interface Load {
  rps: number;
  p50: number;
  p99: number;
  /** Answered. */
  requests: number;
  sent: number;
  /** Answered 2xx. */
  ok: number;
  bad: number;
  /** The server's own CPU time (user + system) over the load, per request served, in µs; undefined without /proc. */
  cpuUs?: number;
}

/**
 * Drives one target from a load process of its own (load.ts takes `spec` as it is). With `server`, the server
 * process's CPU time is read before the load process starts and after it has exited (the server is idle in between,
 * apart from the load) and divided by the requests served.
 */
export const runLoad = (spec: Record<string, unknown>, server?: ChildProcess): Promise<Load> =>
  new Promise((resolve, reject) => {
    const cpuBefore = cpuSecondsOf(server?.pid);
    const child = spawn(process.execPath, [join(dist, 'bench/load.js'), JSON.stringify(spec)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`load exited ${code}`));
      const result = JSON.parse(out) as Load;
      const cpuAfter = cpuSecondsOf(server?.pid);
      if (cpuBefore !== undefined && cpuAfter !== undefined && result.requests > 0) {
        result.cpuUs = ((cpuAfter - cpuBefore) * 1e6) / result.requests;
      }
      resolve(result);
    });
  });

export const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};
