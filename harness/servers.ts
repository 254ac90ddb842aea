import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Real servers for the adapter suites, started and stopped by the tests themselves on free loopback ports, in
 * temporary directories, calling nothing outside this machine. A binary missing on a laptop makes its suites skip
 * with the reason; with CI=true it is a failure instead.
 */

const inCI = process.env['CI'] === 'true';

/** A port nobody listens on right now. */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() =>
        typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });

const accepts = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

const waitUntilAccepting = async (
  port: number,
  child: ChildProcess,
  what: string,
  log: () => string,
): Promise<void> => {
  const until = Date.now() + 30_000;
  while (Date.now() < until) {
    if (child.exitCode !== null)
      throw new Error(`${what} exited with ${child.exitCode} at start: ${log().slice(-2000)}`);
    if (await accepts(port)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what} did not accept connections on port ${port} within 30 s: ${log().slice(-2000)}`);
};

const onPath = (name: string): string | undefined => {
  const found = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  const path = found.stdout.trim();
  return found.status === 0 && path !== '' ? path : undefined;
};

/** Where a server binary is, or why the suites that need it are skipped here. Under CI a missing one throws. */
const locate = (
  name: string,
  candidates: Array<string | undefined>,
  install: string,
): { bin: string } | { skip: string } => {
  for (const c of candidates) if (c !== undefined && existsSync(c)) return { bin: c };
  const reason = `${name} not found (install it with: ${install})`;
  if (inCI) throw new Error(`CI=true and ${reason}`);
  return { skip: reason };
};

export const ferretDbBinary = (): { bin: string } | { skip: string } => {
  const gopath = process.env['GOPATH'] ?? join(homedir(), 'go');
  return locate(
    'ferretdb',
    [process.env['FERRETDB_BIN'], onPath('ferretdb'), join(process.env['GOBIN'] ?? join(gopath, 'bin'), 'ferretdb')],
    'bash scripts/install-ferretdb.sh',
  );
};

export interface RunningServer {
  readonly port: number;
  readonly uri: string;
  /** Stops the process (SIGKILL when `hard`), keeping its data directory. */
  readonly stop: (hard?: boolean) => Promise<void>;
  /** Starts it again on the same port and data. */
  readonly start: () => Promise<void>;
  /** Stops it and removes its data. */
  readonly dispose: () => Promise<void>;
}

const supervise = async (
  what: string,
  makeArgs: () => { bin: string; args: string[]; env?: Record<string, string> },
  port: number,
  uri: string,
  dir: string,
): Promise<RunningServer> => {
  let child: ChildProcess | undefined;
  let log = '';
  const start = async () => {
    const { bin, args, env } = makeArgs();
    log = '';
    child = spawn(bin, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout?.on('data', (c: Buffer) => (log += c.toString()));
    child.stderr?.on('data', (c: Buffer) => (log += c.toString()));
    // The test run may end while a shared server still runs: it must not hold the run open (see the exit hook).
    child.unref();
    (child.stdout as unknown as { unref?: () => void } | null)?.unref?.();
    (child.stderr as unknown as { unref?: () => void } | null)?.unref?.();
    await waitUntilAccepting(port, child, what, () => log);
  };
  const stop = async (hard = false) => {
    const running = child;
    // A process ended by a signal has signalCode set and exitCode null.
    if (running === undefined || running.exitCode !== null || running.signalCode !== null) return;
    running.ref(); // waiting for its exit must hold the run open
    const exited = new Promise((r) => running.once('exit', r));
    running.kill(hard ? 'SIGKILL' : 'SIGTERM');
    await exited;
  };
  process.once('exit', () => {
    child?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  await start();
  return {
    port,
    uri,
    stop,
    start,
    dispose: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
};

/** FerretDB v1.24.2 with its SQLite handler: a MongoDB wire-protocol server, no telemetry, no debug listener. */
export const startFerretDb = async (bin: string): Promise<RunningServer> => {
  const dir = mkdtempSync(join(tmpdir(), 'ferretdb-'));
  const port = await freePort();
  return supervise(
    'ferretdb',
    () => ({
      bin,
      args: [
        '--handler=sqlite',
        `--sqlite-url=file:${dir}/`,
        `--listen-addr=127.0.0.1:${port}`,
        `--state-dir=${dir}`,
        '--telemetry=disable',
        '--debug-addr=-',
        '--log-level=warn',
      ],
      env: { DO_NOT_TRACK: '1', FERRETDB_TELEMETRY: 'disable' },
    }),
    port,
    `mongodb://127.0.0.1:${port}/`,
    dir,
  );
};

let shared: Promise<RunningServer> | undefined;
/** One FerretDB for every suite of the run that only needs a server (each suite uses a database of its own). */
export const sharedFerretDb = (bin: string): Promise<RunningServer> => (shared ??= startFerretDb(bin));

export const redisBinary = (): { bin: string } | { skip: string } =>
  locate(
    'redis-server',
    [process.env['REDIS_SERVER_BIN'], onPath('redis-server'), '/usr/bin/redis-server'],
    'apt-get install redis-server',
  );

/** redis-server on loopback only, in a temporary directory, with an fsync-always append-only file (survives a restart). */
export const startRedis = async (bin: string): Promise<RunningServer> => {
  const dir = mkdtempSync(join(tmpdir(), 'redis-'));
  const port = await freePort();
  return supervise(
    'redis-server',
    () => ({
      bin,
      args: [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'yes',
        '--appendfsync',
        'always',
        '--dir',
        dir,
        '--protected-mode',
        'yes',
      ],
    }),
    port,
    `redis://127.0.0.1:${port}`,
    dir,
  );
};

let sharedRedisServer: Promise<RunningServer> | undefined;
/** One redis-server for every suite of the run that only needs a server (keys are random per test). */
export const sharedRedis = (bin: string): Promise<RunningServer> => (sharedRedisServer ??= startRedis(bin));
