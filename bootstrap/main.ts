// First: an unsupported Node.js is refused with one line; then SIGTERM and SIGINT are an ordinary shutdown from
// here on, start-up included.
import './require-supported-node.js';
import { onStopSignal } from './signals.js';
import type { Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { corsPolicy } from '../adapters/http/server/cors.js';
import { defaultServerLimits, type EdgeServer } from '../adapters/http/server/server.js';
import { metricsServer } from '../adapters/http/metrics-listener.js';
import { serviceMetrics } from '../adapters/observability/metrics.js';
import { backendBreakers } from '../application/fail-fast/breakers.js';
import {
  failFastLimiter,
  failFastPlants,
  failFastTokens,
  timedTokens,
  tokenStoreGuard,
} from '../application/fail-fast/guards.js';
import { connectBackends, memoryMaxPlants, type Backends } from './backends.js';
import { buildApp } from './build-app.js';
import { ConfigError, loadConfig } from './config.js';
import { createLogger, logDrained } from './logger.js';
import { startTracing } from './tracing.js';
import { serviceVersion } from './version.js';

/** How long the exit waits for stdout to take the last log lines. */
const LOG_DRAIN_MS = 1000;
/** How long a shutdown that cut requests waits for their connections to close (a turn or two in practice). */
const CUT_SETTLE_MS = 200;
/** How long the stop waits for the last spans' export: a collector that answers takes milliseconds. */
const TRACE_FLUSH_MS = 1000;

/** Resolves with the promise's value, or with undefined once `ms` have passed. */
const within = <T>(promise: Promise<T>, ms: number): Promise<T | undefined> => {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(resolve, ms, undefined)));
  return Promise.race([promise.catch(() => undefined), late]).finally(() => clearTimeout(timer));
};

/** Whether `port` can be listened on now (on `host`, or every address). */
const canListen = (port: number, host: string | undefined): Promise<boolean> =>
  new Promise((resolve) => {
    const probe = createNetServer();
    probe.once('error', () => resolve(false));
    probe.listen({ port, ...(host === undefined ? {} : { host }), exclusive: true }, () =>
      probe.close(() => resolve(true)),
    );
  });

/** The nearest free port of the next 100 above a busy one that is not `avoid` (the other listener's). */
const freePortNear = async (port: number, host: string | undefined, avoid: number | undefined) => {
  for (let p = port + 1; p <= Math.min(65535, port + 100); p += 1) {
    if (p !== avoid && (await canListen(p, host))) return p;
  }
  return undefined;
};

/** A listen failure as one line that names the variable to change. */
const listenFailure = async (
  e: unknown,
  portVariable: string,
  port: number,
  host: string | undefined,
  avoid: number | undefined,
): Promise<Error> => {
  const code = (e as NodeJS.ErrnoException).code ?? 'unknown error';
  const where = host === undefined ? `port ${port}` : `${host}, port ${port}`;
  if (['EADDRNOTAVAIL', 'ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAFNOSUPPORT'].includes(code)) {
    return new ConfigError(
      `HOST: cannot listen on ${JSON.stringify(host)} (${code}: not an address of this machine); for example HOST=127.0.0.1`,
    );
  }
  switch (code) {
    case 'EADDRINUSE': {
      const free = await freePortNear(port, host, avoid);
      return new Error(
        `${portVariable}: ${where} is already in use (EADDRINUSE); ` +
          (free === undefined
            ? `stop what listens there, or choose another port`
            : `for example ${portVariable}=${free} (free now)`),
      );
    }
    case 'EACCES': {
      const example = portVariable === 'METRICS_PORT' ? 9464 : 3000;
      return new Error(
        `${portVariable}: not allowed to listen on ${where} (EACCES: ports below 1024 need privileges); for example ${portVariable}=${example === avoid ? example + 1 : example}`,
      );
    }
    default:
      return new Error(`${portVariable}: cannot listen on ${where} (${code})`);
  }
};

const listen = (
  server: Server,
  port: number,
  host: string | undefined,
  portVariable: string,
  avoid: number | undefined,
): Promise<void> =>
  new Promise((resolve, reject) => {
    const failed = (e: unknown) => void listenFailure(e, portVariable, port, host, avoid).then(reject);
    server.once('error', failed);
    server.listen({ port, ...(host === undefined ? {} : { host }) }, () => {
      server.off('error', failed);
      resolve();
    });
  });

/** Starts the service: the only file that reads the environment. */
const main = async (): Promise<void> => {
  const config = loadConfig(process.env);
  // A stdout whose reader is gone fails writes with EPIPE: never a crash (the logger handles its own).
  process.stdout.on('error', () => undefined);
  const logger = createLogger(config);
  logger.info({ storage: config.storage.kind, auth: config.auth.kind }, 'starting');

  let api: EdgeServer | undefined;
  const inFlight = () => api?.inFlight() ?? 0;
  const tracing =
    config.tracing === undefined ? undefined : await startTracing(config.tracing, config, serviceVersion(), logger);
  const metrics = serviceMetrics({
    inFlight,
    inFlightCountsScrapes: config.metricsPort === undefined,
    version: serviceVersion(),
    ...(tracing === undefined ? {} : { droppedSpans: tracing.droppedSpans }),
  });
  const breakers = backendBreakers({ logger, metrics: metrics.backends, reasonWaitMs: 250 });
  const failFast = { breakers, metrics: metrics.backends };

  let stopping = false;
  let backends: Backends | undefined;
  let admin: Server | undefined;

  /** Drains the requests, closes the backends and exits 0 within SHUTDOWN_TIMEOUT_MS; what still runs then is cut. */
  const stop = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    const started = performance.now();
    const left = () => Math.max(0, config.shutdownTimeoutMs - (performance.now() - started));
    const serving = api?.listening === true;
    logger.info(
      { signal, timeoutMs: config.shutdownTimeoutMs },
      serving ? 'stopping: finishing in-flight requests' : 'stopping during start-up',
    );
    if (admin !== undefined) {
      admin.close();
      admin.closeAllConnections();
    }
    if (api !== undefined && serving) {
      const server = api;
      // Keep-alive connections go as soon as they are idle; whatever is still busy at the bound is cut.
      const closed = server.drain().then(() => true);
      const drained = (await within(closed, left())) === true;
      if (drained) logger.info({}, 'in-flight requests finished');
      else {
        logger.warn({ cutRequests: inFlight() }, 'shutdown bound reached: cutting the requests still running');
        server.closeAllConnections();
        await closed;
        // The server's 'close' comes before its cut connections' own: wait briefly for those, so a cut request not
        // held by a backend is logged 499 before the exit (one held is logged as the backends close).
        for (const until = performance.now() + CUT_SETTLE_MS; inFlight() > 0 && performance.now() < until;) {
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
    // Backends still connecting (a signal during start-up) are not waited for: their sockets go with the process.
    if (backends !== undefined) {
      const closed = await within(
        backends.close().then(() => true),
        left(),
      );
      if (closed === true) logger.info({}, 'backends closed');
      else logger.warn({}, 'shutdown bound reached: backends left to close with the process');
    }
    // The last spans get a short export; none with the collector away (the last export failed).
    if (tracing !== undefined) {
      const flushed = await within(
        tracing.shutdown().then(() => true),
        tracing.failing() ? 0 : Math.min(left(), TRACE_FLUSH_MS),
      );
      if (flushed === true) logger.info({}, 'traces flushed');
      else logger.warn({ collectorFailing: tracing.failing() }, 'queued spans not exported');
    }
    logger.info({ ms: Math.round(performance.now() - started) }, 'stopped');
    logger.flush();
    // The last lines reach a slow log reader; a stuck one delays the exit by a second at most.
    await logDrained(LOG_DRAIN_MS);
    process.exit(0);
  };
  onStopSignal((signal) => void stop(signal));

  const connected = await connectBackends(config, logger, {
    driverError: breakers.driverError,
    tokenStoreCalls: tokenStoreGuard(failFast),
    redisReady: (backend, address) => {
      metrics.backends.redisServer?.(backend, address);
      breakers.answered(backend);
    },
  });
  backends = connected;
  if (stopping) return;

  const plants = tracing === undefined ? connected.plants : tracing.plants(connected.plants);
  const tokens = tracing === undefined ? connected.tokens : tracing.tokens(connected.tokens);
  const limiter =
    connected.limiter === undefined || tracing === undefined ? connected.limiter : tracing.limiter(connected.limiter);
  const server = buildApp(
    {
      plants: failFastPlants(plants, failFast),
      tokens: connected.tokensGuarded ? timedTokens(tokens, metrics.backends) : failFastTokens(tokens, failFast),
      ...(limiter === undefined ? {} : { limiter: failFastLimiter(limiter, failFast) }),
      ...(tracing === undefined ? {} : { tracer: tracing.requests }),
      logger,
      bodyLimit: config.bodyLimit,
      metrics: metrics.http,
      ...(config.metricsPort === undefined ? { metricsEndpoint: metrics.exposition } : {}),
      ...(config.corsOrigins === undefined ? {} : { cors: corsPolicy(config.corsOrigins) }),
      maxPlantsPerOwner: config.maxPlantsPerOwner,
    },
    { ...defaultServerLimits, ...config.serverLimits },
  );
  api = server;
  // Both listeners are bound before anything is printed: a HOST or port that cannot be used stops here (exit 1).
  await listen(server, config.port, config.host, 'PORT', config.metricsPort);
  if (config.metricsPort !== undefined) {
    admin = metricsServer(metrics.exposition, {
      logger,
      limits: { ...defaultServerLimits, ...config.serverLimits },
      metrics: metrics.http,
    });
    await listen(admin, config.metricsPort, config.host, 'METRICS_PORT', config.port);
  }
  if (stopping) return;

  if (config.storage.kind === 'memory') {
    logger.warn(
      { storage: 'memory' },
      'in-memory storage: every plant is lost when the process exits, and no other process sees it (run one process only, or STORAGE=mongodb)',
    );
  }
  const { address, port } = server.address() as AddressInfo;
  const metricsPort = admin === undefined ? port : (admin.address() as AddressInfo).port;
  // Where a newcomer reads the API: on every interface (HOST unset) this machine's own name for it works.
  const host =
    address === '::' || address === '0.0.0.0' ? 'localhost' : address.includes(':') ? `[${address}]` : address;
  logger.info(
    {
      pid: process.pid,
      address,
      port,
      docs: `http://${host}:${port}/docs`,
      metricsPort,
      storage: config.storage.kind,
      auth: config.auth.kind,
      cors: config.corsOrigins ?? 'off',
      tracing: config.tracing === undefined ? 'off' : config.tracing.sampler,
      maxPlantsPerOwner: config.maxPlantsPerOwner,
      ...(config.storage.kind === 'memory' ? { memoryMaxPlants: memoryMaxPlants(config.storage) } : {}),
    },
    'listening',
  );
};

main().catch((e: unknown) => {
  if (e instanceof ConfigError) process.stderr.write(`config: ${e.message}\n`);
  else process.stderr.write(`start-up failed: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
