import type { Logger } from '../application/ports/logger.js';
import type { PlantRepository } from '../application/ports/plant-repository.js';
import type { RateLimiter } from '../application/ports/rate-limiter.js';
import type { TokenVerifier } from '../application/ports/token-verifier.js';
import type { Config, TracingConfig } from './config.js';

/** Starts tracing: the edge's tracer, the port decorators, the drop counts; the SDK is imported only when it is on. */
export const startTracing = async (
  tracing: TracingConfig,
  config: Pick<Config, 'storage' | 'auth' | 'rateLimit'>,
  version: string,
  logger: Logger,
) => {
  const otel = await import('../adapters/observability/tracing.js');
  const started = otel.startTracing({ ...tracing, serviceVersion: version, logger });
  const { tracer } = started;
  // The plants collection names MongoDB's spans; the adapter is loaded for STORAGE=mongodb anyway.
  const storage =
    config.storage.kind === 'mongodb'
      ? {
          backend: 'storage',
          dbSystem: 'mongodb',
          dbNamespace: config.storage.db,
          collection: (await import('../adapters/storage/mongodb/mongodb-plant-repository.js')).COLLECTION,
        }
      : { backend: 'storage' };
  const tokens =
    config.auth.kind === 'redis' ? { backend: 'token store', dbSystem: 'redis' } : { backend: 'token store' };
  const limiter =
    config.rateLimit.store === 'redis' ? { backend: 'rate limiter', dbSystem: 'redis' } : { backend: 'rate limiter' };
  return {
    requests: otel.requestTracer(tracer),
    plants: (plants: PlantRepository) => otel.tracedPlants(plants, tracer, storage),
    tokens: (verifier: TokenVerifier) => otel.tracedTokens(verifier, tracer, tokens),
    limiter: (rate: RateLimiter) => otel.tracedLimiter(rate, tracer, limiter),
    droppedSpans: () => started.dropped,
    failing: started.failing,
    shutdown: started.shutdown,
  };
};
