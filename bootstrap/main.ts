import './require-supported-node.js';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { defaultServerLimits } from '../adapters/http/server.js';
import { buildApp } from './build-app.js';
import { getHeapStatistics } from 'node:v8';
import { memoryCapacity } from '../adapters/storage/memory/capacity.js';
import { connectBackends, memoryMaxPlants } from './backends.js';
import { ConfigError, loadConfig } from './config.js';

/** Starts the service: the only file that reads the environment. */
const main = async (): Promise<void> => {
  const config = loadConfig(process.env);
  const logger = pino({ level: config.logLevel, base: null });
  const backends = await connectBackends(config, logger);

  if (backends.generatedToken !== undefined) {
    process.stdout.write(
      `No AUTH_TOKENS configured: generated a token for this run (owner "local", scopes plants:read plants:write):\n` +
        `${backends.generatedToken}\n`,
    );
  }
  if (config.storage.kind === 'memory') {
    logger.warn(
      { storage: 'memory' },
      'in-memory storage: every plant is lost when the process exits, and no other process sees it (run one process only, or STORAGE=mongodb)',
    );
    const bound = memoryMaxPlants(config.storage);
    const heapHolds = memoryCapacity(getHeapStatistics().heap_size_limit);
    if (bound > heapHolds) {
      logger.warn(
        { maxPlants: bound, heapHolds },
        'MEMORY_MAX_PLANTS is above what the heap holds at worst; the process may run out of memory before the store is full',
      );
    }
  }

  const server = buildApp(
    { ...backends, logger, bodyLimit: config.bodyLimit, maxPlantsPerOwner: config.maxPlantsPerOwner },
    { ...defaultServerLimits, ...config.serverLimits },
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: config.port, ...(config.host === undefined ? {} : { host: config.host }) }, resolve);
  });
  const { address, port } = server.address() as AddressInfo;
  logger.info(
    {
      address,
      port,
      storage: config.storage.kind,
      auth: config.auth.kind,
      maxPlantsPerOwner: config.maxPlantsPerOwner,
      ...(config.storage.kind === 'memory' ? { memoryMaxPlants: memoryMaxPlants(config.storage) } : {}),
    },
    'listening',
  );

  let stopping = false;
  const stop = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping: finishing in-flight requests');
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    // Keep-alive sockets go as soon as they are idle; whatever is still busy at the bound is cut.
    const idle = setInterval(() => server.closeIdleConnections(), 50);
    const bound = setTimeout(() => server.closeAllConnections(), config.shutdownTimeoutMs);
    server.closeIdleConnections();
    await closed;
    clearInterval(idle);
    clearTimeout(bound);
    await backends.close();
    logger.info({}, 'stopped');
    logger.flush();
    process.exit(0);
  };
  process.on('SIGTERM', (s) => void stop(s));
  process.on('SIGINT', (s) => void stop(s));
};

main().catch((e: unknown) => {
  if (e instanceof ConfigError) process.stderr.write(`config: ${e.message}\n`);
  else process.stderr.write(`start-up failed: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
