import type { RequestTracer } from '../adapters/http/api/request-tracing.js';
import type { Logger } from '../application/ports/logger.js';
import type { PlantRepository } from '../application/ports/plant-repository.js';
import type { RateLimiter } from '../application/ports/rate-limiter.js';
import type { TokenVerifier } from '../application/ports/token-verifier.js';
import type { Config, TracingConfig } from './config.js';

/** What tracing adds to the composition: the edge's tracer, the port decorators, the drop counts, the last flush. */
export interface TracingWiring {
  readonly requests: RequestTracer;
  readonly plants: (plants: PlantRepository) => PlantRepository;
  readonly tokens: (tokens: TokenVerifier) => TokenVerifier;
  readonly limiter: (limiter: RateLimiter) => RateLimiter;
  readonly droppedSpans: () => { readonly queueFull: number; readonly exportFailed: number };
  /** Whether exports are failing now (the collector away). */
  readonly failing: () => boolean;
  readonly shutdown: () => Promise<void>;
}

/**
 * Starts OpenTelemetry tracing as configured. The SDK is imported here, only when tracing is on: a service without
 * it loads none of it.
 */
export const startTracing = async (
  tracing: TracingConfig,
  config: Pick<Config, 'storage' | 'auth' | 'rateLimit'>,
  version: string,
  logger: Logger,
): Promise<TracingWiring> => {
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
    plants: (plants) => otel.tracedPlants(plants, tracer, storage),
    tokens: (verifier) => otel.tracedTokens(verifier, tracer, tokens),
    limiter: (rate) => otel.tracedLimiter(rate, tracer, limiter),
    droppedSpans: () => started.dropped,
    failing: started.failing,
    shutdown: started.shutdown,
  };
};
