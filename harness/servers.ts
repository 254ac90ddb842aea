import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  chownSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, connect } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

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

/** Whether something accepts connections on the loopback port now. */
export const accepts = (port: number): Promise<boolean> =>
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
  /** The server it keeps its data in, when it has one of its own (FerretDB's PostgreSQL). */
  readonly backend?: RunningServer;
}

/** What the run does when it ends, whatever the suites did: stop every server left and remove its data. */
const atExit = new Set<() => void>();
process.once('exit', () => {
  for (const cleanUp of atExit) cleanUp();
});

/** How to run a server: `as` runs it under another account (PostgreSQL refuses to run as root). */
interface Launch {
  bin: string;
  args: string[];
  env?: Record<string, string>;
  as?: Account;
}

/** The processes below `pid` (Linux, from /proc; elsewhere none). */
const descendantsOf = (pid: number): number[] => {
  const parents = new Map<number, number>();
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // ended meanwhile
    }
  }
  const found: number[] = [];
  const below = [pid];
  while (below.length > 0) {
    const parent = below.pop() as number;
    for (const [child, ppid] of parents) {
      if (ppid === parent) {
        found.push(child);
        below.push(child);
      }
    }
  }
  return found;
};

const supervise = async (
  what: string,
  makeArgs: () => Launch,
  port: number,
  uri: string,
  dir: string,
  signals: { readonly stop: NodeJS.Signals; readonly atExit: NodeJS.Signals } = { stop: 'SIGTERM', atExit: 'SIGKILL' },
): Promise<RunningServer> => {
  let child: ChildProcess | undefined;
  let log = '';
  const start = async () => {
    const { bin, args, env, as } = makeArgs();
    log = '';
    child = spawn(bin, args, {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(as === undefined ? {} : { uid: as.uid, gid: as.gid, cwd: dir }),
    });
    child.stdout?.on('data', (c: Buffer) => (log += c.toString()));
    child.stderr?.on('data', (c: Buffer) => (log += c.toString()));
    // The test run may end while a shared server still runs: it must not hold the run open (see the exit hook).
    child.unref();
    (child.stdout as unknown as { unref?: () => void } | null)?.unref?.();
    (child.stderr as unknown as { unref?: () => void } | null)?.unref?.();
    await waitUntilAccepting(port, child, what, () => log);
  };
  /**
   * Ends the server: gracefully, or `hard` as a crash, SIGKILL to it and every process it started. A crash takes
   * the whole server: PostgreSQL's backends outlive a SIGKILLed postmaster until they notice (a few milliseconds, or
   * more on a loaded machine), and meanwhile go on answering the connections they hold, so a test of the outage could
   * still be served by them.
   */
  const stop = async (hard = false) => {
    const running = child;
    // A process ended by a signal has signalCode set and exitCode null.
    if (running === undefined || running.exitCode !== null || running.signalCode !== null) return;
    running.ref(); // waiting for its exit must hold the run open
    const exited = new Promise((r) => running.once('exit', r));
    const descendants = hard && running.pid !== undefined ? descendantsOf(running.pid) : [];
    running.kill(hard ? 'SIGKILL' : signals.stop);
    for (const pid of descendants) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await exited;
  };
  const cleanUp = () => {
    child?.kill(signals.atExit);
    rmSync(dir, { recursive: true, force: true });
  };
  atExit.add(cleanUp);
  await start();
  return {
    port,
    uri,
    stop,
    start,
    dispose: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
      atExit.delete(cleanUp);
    },
  };
};

/** FerretDB's arguments and environment over a backend: loopback only, no telemetry, no debug listener. */
const ferretDbRun = (backend: string[], port: number, dir: string) => ({
  args: [
    ...backend,
    `--listen-addr=127.0.0.1:${port}`,
    `--state-dir=${dir}`,
    '--telemetry=disable',
    '--debug-addr=-',
    '--log-level=warn',
  ],
  env: { DO_NOT_TRACK: '1', FERRETDB_TELEMETRY: 'disable' },
});

/** FerretDB v1.24.2 with its SQLite handler: a MongoDB wire-protocol server, no telemetry, no debug listener. */
export const startFerretDb = async (bin: string): Promise<RunningServer> => {
  const dir = mkdtempSync(join(tmpdir(), 'ferretdb-'));
  const port = await freePort();
  return supervise(
    'ferretdb',
    () => ({
      bin,
      ...ferretDbRun(['--handler=sqlite', `--sqlite-url=file:${dir}/`], port, dir),
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

/**
 * redis-server on loopback only, in a temporary directory, with an fsync-always append-only file (survives a restart);
 * `extraArgs` are added to its command line (an `--aclfile`, for one).
 */
export const startRedis = async (bin: string, extraArgs: readonly string[] = []): Promise<RunningServer> => {
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
        ...extraArgs,
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

/** A Redis primary, one replica and three sentinels, all on loopback ports (see startRedisSentinels). */
export interface RunningSentinels {
  readonly primary: RunningServer;
  readonly replica: RunningServer;
  readonly sentinels: readonly RunningServer[];
  /** The name the sentinels monitor the primary under. */
  readonly name: string;
  /** The sentinels as REDIS_SENTINELS takes them: `127.0.0.1:<port>,...`. */
  readonly addresses: string;
  readonly dispose: () => Promise<void>;
}

/** Sentinel's timings, short for a test: a primary silent for 1 s is down, and a failover may restart after 3 s. */
export const SENTINEL_DOWN_AFTER_MS = 1000;
const SENTINEL_FAILOVER_TIMEOUT_MS = 3000;

/**
 * Debian's redis-server in both roles: a primary, a replica of it (`--replicaof`), and three sentinels
 * (`redis-server <config> --sentinel`) that monitor the primary with a quorum of two. Each sentinel has a config file
 * of its own in its directory, which it rewrites as it learns (a restarted sentinel starts from what it knew). The
 * caller waits for the set to be in place (the replica in sync, each sentinel knowing the replica and the others):
 * the harness only starts the processes.
 */
export const startRedisSentinels = async (bin: string, name = 'plantstore'): Promise<RunningSentinels> => {
  const primary = await startRedis(bin);
  const replica = await startRedis(bin, ['--replicaof', '127.0.0.1', String(primary.port)]);
  const sentinels: RunningServer[] = [];
  try {
    for (let i = 0; i < 3; i++) {
      const dir = mkdtempSync(join(tmpdir(), 'redis-sentinel-'));
      const port = await freePort();
      const config = join(dir, 'sentinel.conf');
      writeFileSync(
        config,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `sentinel monitor ${name} 127.0.0.1 ${primary.port} 2`,
          `sentinel down-after-milliseconds ${name} ${SENTINEL_DOWN_AFTER_MS}`,
          `sentinel failover-timeout ${name} ${SENTINEL_FAILOVER_TIMEOUT_MS}`,
          `sentinel parallel-syncs ${name} 1`,
          '',
        ].join('\n'),
      );
      sentinels.push(
        await supervise(
          'redis-server --sentinel',
          () => ({ bin, args: [config, '--sentinel'] }),
          port,
          `redis://127.0.0.1:${port}`,
          dir,
        ),
      );
    }
  } catch (e) {
    await Promise.all([...sentinels, replica, primary].map((server) => server.dispose()));
    throw e;
  }
  return {
    primary,
    replica,
    sentinels,
    name,
    addresses: sentinels.map((sentinel) => `127.0.0.1:${sentinel.port}`).join(','),
    dispose: async () => {
      await Promise.all([...sentinels, replica, primary].map((server) => server.dispose()));
    },
  };
};

/** An unprivileged account to run a server as: PostgreSQL refuses to run as root. */
export interface Account {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
}

const accountNamed = (name: string): Account | undefined => {
  const id = (flag: string) => spawnSync('id', [flag, name], { encoding: 'utf8' });
  const [uid, gid] = [id('-u'), id('-g')];
  if (uid.status !== 0 || gid.status !== 0) return undefined;
  return { name, uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
};

/** PostgreSQL's server programs, and the account to run them as when the tests run as root. */
export interface PostgresBinaries {
  readonly initdb: string;
  readonly postgres: string;
  readonly as?: Account;
}

/**
 * Where PostgreSQL's initdb and postgres are: POSTGRES_BIN_DIR, PATH, or Debian's /usr/lib/postgresql/<newest>/bin.
 * Run as root, the harness runs them as the `postgres` account (Debian's package creates it); without one it cannot.
 */
export const postgresBinaries = (): PostgresBinaries | { skip: string } => {
  const debian = '/usr/lib/postgresql';
  const versions = existsSync(debian)
    ? readdirSync(debian)
        .filter((v) => /^\d+$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  const envDir = process.env['POSTGRES_BIN_DIR'];
  const initdb = locate(
    'PostgreSQL (initdb, postgres)',
    [
      envDir === undefined ? undefined : join(envDir, 'initdb'),
      onPath('initdb'),
      ...versions.map((v) => join(debian, v, 'bin', 'initdb')),
    ],
    'apt-get install postgresql',
  );
  if ('skip' in initdb) return initdb;
  const postgres = join(dirname(realpathSync(initdb.bin)), 'postgres');
  if (process.getuid?.() !== 0) return { initdb: initdb.bin, postgres };
  const as = accountNamed('postgres');
  if (as === undefined) {
    const reason =
      'PostgreSQL refuses to run as root and there is no "postgres" account to run it as (apt-get install postgresql creates one)';
    if (inCI) throw new Error(`CI=true and ${reason}`);
    return { skip: reason };
  }
  return { initdb: initdb.bin, postgres, as };
};

/**
 * A throwaway PostgreSQL cluster: initdb into a temporary directory (trust authentication, C locale, UTF-8), then the
 * server on a free loopback port with its unix socket in that directory and no fsync (a test cluster: commits still
 * reach the kernel, so a killed server keeps them). The uri names the `postgres` database as user `postgres`.
 */
export const startPostgres = async (pg: PostgresBinaries): Promise<RunningServer> => {
  const dir = mkdtempSync(join(tmpdir(), 'postgres-'));
  if (pg.as !== undefined) chownSync(dir, pg.as.uid, pg.as.gid);
  const data = join(dir, 'data');
  const initdb = spawnSync(
    pg.initdb,
    ['-D', data, '-U', 'postgres', '--auth=trust', '--no-locale', '-E', 'UTF8', '--no-sync'],
    {
      encoding: 'utf8',
      cwd: dir,
      env: { ...process.env, LC_ALL: 'C' },
      ...(pg.as === undefined ? {} : { uid: pg.as.uid, gid: pg.as.gid }),
    },
  );
  if (initdb.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`initdb failed (${initdb.status ?? initdb.error?.message}): ${initdb.stderr.slice(-2000)}`);
  }
  const port = await freePort();
  return supervise(
    'postgres',
    () => ({
      bin: pg.postgres,
      args: [
        '-D',
        data,
        '-p',
        String(port),
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        `unix_socket_directories=${dir}`,
        '-c',
        'fsync=off',
        '-c',
        'full_page_writes=off',
      ],
      env: { LC_ALL: 'C' },
      ...(pg.as === undefined ? {} : { as: pg.as }),
    }),
    port,
    `postgres://postgres@127.0.0.1:${port}/postgres`,
    dir,
    // SIGINT is PostgreSQL's fast shutdown (SIGTERM would wait for every client); SIGQUIT at exit still lets the
    // postmaster end its backends and release its shared memory.
    { stop: 'SIGINT', atExit: 'SIGQUIT' },
  );
};

/**
 * FerretDB v1.24.2 with its PostgreSQL handler, on a PostgreSQL cluster of its own. `stop` and `start` act on FerretDB,
 * `backend` on PostgreSQL; `dispose` removes both.
 */
export const startFerretDbOnPostgres = async (bin: string, pg: PostgresBinaries): Promise<RunningServer> => {
  const postgres = await startPostgres(pg);
  const dir = mkdtempSync(join(tmpdir(), 'ferretdb-pg-'));
  const port = await freePort();
  const ferret = await supervise(
    'ferretdb (postgresql)',
    () => ({
      bin,
      ...ferretDbRun(['--handler=postgresql', `--postgresql-url=${postgres.uri}`], port, dir),
    }),
    port,
    `mongodb://127.0.0.1:${port}/`,
    dir,
  ).catch(async (e: unknown) => {
    await postgres.dispose();
    throw e;
  });
  return {
    ...ferret,
    backend: postgres,
    dispose: async () => {
      await ferret.dispose();
      await postgres.dispose();
    },
  };
};

let sharedOnPostgres: Promise<RunningServer> | undefined;
/** One FerretDB on PostgreSQL for every suite of the run that only needs a server (a database each). */
export const sharedFerretDbOnPostgres = (bin: string, pg: PostgresBinaries): Promise<RunningServer> =>
  (sharedOnPostgres ??= startFerretDbOnPostgres(bin, pg));

/** Prometheus's promtool (Debian: apt-get install prometheus), for `promtool check metrics` on a scrape. */
export const promtoolBinary = (): { bin: string } | { skip: string } =>
  locate(
    'promtool',
    [process.env['PROMTOOL_BIN'], onPath('promtool'), '/usr/bin/promtool'],
    'apt-get install prometheus',
  );

export const jaegerBinary = (): { bin: string } | { skip: string } => {
  const gopath = process.env['GOPATH'] ?? join(homedir(), 'go');
  return locate(
    'jaeger',
    [process.env['JAEGER_BIN'], onPath('jaeger'), join(process.env['GOBIN'] ?? join(gopath, 'bin'), 'jaeger')],
    'bash scripts/install-jaeger.sh',
  );
};

export interface RunningJaeger extends RunningServer {
  /** Jaeger's query API (`GET /api/traces/{traceId}`), http://127.0.0.1:<port>. */
  readonly queryUrl: string;
}

/**
 * Jaeger v1.76.0's `jaeger` (the OpenTelemetry collector with Jaeger's storage and query extensions): an OTLP/HTTP
 * receiver (`uri`, the base a service's OTEL_EXPORTER_OTLP_ENDPOINT names) and the query API, both on free loopback
 * ports, traces kept in memory. Nothing else listens and nothing calls out: the collector's own metrics are off (its
 * default serves them on 0.0.0.0:8888), and it traces nothing of itself.
 */
export const startJaeger = async (bin: string): Promise<RunningJaeger> => {
  const dir = mkdtempSync(join(tmpdir(), 'jaeger-'));
  const [otlp, query, queryGrpc] = [await freePort(), await freePort(), await freePort()];
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    [
      'service:',
      '  extensions: [jaeger_storage, jaeger_query]',
      '  pipelines:',
      '    traces:',
      '      receivers: [otlp]',
      '      exporters: [jaeger_storage_exporter]',
      '  telemetry:',
      '    metrics:',
      '      level: none',
      '    logs:',
      '      level: warn',
      'extensions:',
      '  jaeger_storage:',
      '    backends:',
      '      memstore:',
      '        memory:',
      '          max_traces: 10000',
      '  jaeger_query:',
      '    storage:',
      '      traces: memstore',
      '    http:',
      `      endpoint: 127.0.0.1:${query}`,
      '    grpc:',
      `      endpoint: 127.0.0.1:${queryGrpc}`,
      'receivers:',
      '  otlp:',
      '    protocols:',
      '      http:',
      `        endpoint: 127.0.0.1:${otlp}`,
      'exporters:',
      '  jaeger_storage_exporter:',
      '    trace_storage: memstore',
      '',
    ].join('\n'),
  );
  const server = await supervise(
    'jaeger',
    () => ({ bin, args: ['--config', config] }),
    otlp,
    `http://127.0.0.1:${otlp}`,
    dir,
  );
  // The query API comes up beside the receiver: wait for it too.
  for (const until = Date.now() + 30_000; !(await accepts(query));) {
    if (Date.now() > until) throw new Error(`jaeger's query API did not listen on port ${query} within 30 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { ...server, queryUrl: `http://127.0.0.1:${query}` };
};

export const prometheusBinary = (): { bin: string } | { skip: string } =>
  locate(
    'prometheus',
    [process.env['PROMETHEUS_BIN'], onPath('prometheus'), '/usr/bin/prometheus'],
    'apt-get install prometheus',
  );

/**
 * Waits until `GET <uri>/-/ready` answers 200: Prometheus and Alertmanager accept connections before they can answer
 * their API (Prometheus says 503 "Service Unavailable" until its storage is open).
 */
const untilReady = async (server: RunningServer): Promise<RunningServer> => {
  for (const started = Date.now(); ; await new Promise((r) => setTimeout(r, 50))) {
    const status = await fetch(`${server.uri}/-/ready`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) return server;
    if (Date.now() - started > 60_000) throw new Error(`${server.uri}/-/ready: ${status} after 60 s`);
  }
};

/**
 * Prometheus on a free loopback port with the given configuration (YAML text) and rule files (name → YAML text), its
 * data in a temporary directory. `uri` is its HTTP API's base. It calls out to nothing but the targets it is given.
 */
export const startPrometheus = async (
  bin: string,
  config: string,
  rules: Readonly<Record<string, string>> = {},
): Promise<RunningServer> => {
  const dir = mkdtempSync(join(tmpdir(), 'prometheus-'));
  const port = await freePort();
  writeFileSync(join(dir, 'prometheus.yml'), config);
  for (const [name, text] of Object.entries(rules)) writeFileSync(join(dir, name), text);
  return untilReady(
    await supervise(
      'prometheus',
      () => ({
        bin,
        args: [
          `--config.file=${join(dir, 'prometheus.yml')}`,
          `--storage.tsdb.path=${join(dir, 'data')}`,
          `--web.listen-address=127.0.0.1:${port}`,
          '--log.level=warn',
        ],
      }),
      port,
      `http://127.0.0.1:${port}`,
      dir,
    ),
  );
};

/** Alertmanager's amtool (Debian: apt-get install prometheus-alertmanager), for `amtool check-config`. */
export const amtoolBinary = (): { bin: string } | { skip: string } =>
  locate(
    'amtool',
    [process.env['AMTOOL_BIN'], onPath('amtool'), '/usr/bin/amtool'],
    'apt-get install prometheus-alertmanager',
  );

/** Alertmanager itself: Debian names its binary `prometheus-alertmanager`, upstream's release `alertmanager`. */
export const alertmanagerBinary = (): { bin: string } | { skip: string } =>
  locate(
    'alertmanager',
    [process.env['ALERTMANAGER_BIN'], onPath('prometheus-alertmanager'), onPath('alertmanager')],
    'apt-get install prometheus-alertmanager',
  );

/**
 * Alertmanager on a free loopback port with the given configuration (YAML text), its data in a temporary directory,
 * clustering off (its default listens on 0.0.0.0:9094 for peers). `uri` is its HTTP API's base.
 */
export const startAlertmanager = async (bin: string, config: string): Promise<RunningServer> => {
  const dir = mkdtempSync(join(tmpdir(), 'alertmanager-'));
  const port = await freePort();
  writeFileSync(join(dir, 'alertmanager.yml'), config);
  return untilReady(
    await supervise(
      'alertmanager',
      () => ({
        bin,
        args: [
          `--config.file=${join(dir, 'alertmanager.yml')}`,
          `--storage.path=${join(dir, 'data')}`,
          `--web.listen-address=127.0.0.1:${port}`,
          '--cluster.listen-address=',
          '--log.level=warn',
        ],
      }),
      port,
      `http://127.0.0.1:${port}`,
      dir,
    ),
  );
};

/** systemd-analyze (Debian: apt-get install systemd), for `systemd-analyze verify` of ops/systemd's unit. */
export const systemdAnalyzeBinary = (): { bin: string } | { skip: string } =>
  locate(
    'systemd-analyze',
    [process.env['SYSTEMD_ANALYZE_BIN'], onPath('systemd-analyze'), '/usr/bin/systemd-analyze'],
    'apt-get install systemd',
  );
