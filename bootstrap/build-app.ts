import { createHttpApp, PROBES, type HttpSettings } from '../adapters/http/api/app.js';
import { exactDispatch } from '../adapters/http/api/exact-dispatch.js';
import { boundedMethods } from '../adapters/http/metrics-listener.js';
import {
  createHttpServer,
  defaultServerLimits,
  type EdgeServer,
  type ServerLimits,
} from '../adapters/http/server/server.js';
import type { Application } from '../application/application.js';
import type { Logger } from '../application/ports/logger.js';
import type { PlantRepository } from '../application/ports/plant-repository.js';
import type { RateLimiter } from '../application/ports/rate-limiter.js';
import type { TokenVerifier } from '../application/ports/token-verifier.js';
import { admitRequest } from '../application/use-cases/admit-request.js';
import { authenticate } from '../application/use-cases/authenticate.js';
import { checkReadiness } from '../application/use-cases/check-readiness.js';
import { createPlant, type CreatePlantSettings } from '../application/use-cases/create-plant.js';
import { deletePlant } from '../application/use-cases/delete-plant.js';
import { listPlants } from '../application/use-cases/list-plants.js';

/** The driven ports the application runs on: already-built adapters. */
export interface Ports {
  readonly plants: PlantRepository;
  readonly tokens: TokenVerifier;
  readonly logger: Logger;
  /** Per-principal request limits; none when rate limiting is off. */
  readonly limiter?: RateLimiter;
}

/** The application's own settings (from bootstrap/config.ts); absent ones take the use cases' defaults. */
export type ApplicationSettings = CreatePlantSettings & {
  /** Bound on a readiness answer, in ms (default READINESS_TIMEOUT_MS). */
  readonly readinessTimeoutMs?: number;
};

/** The composition root of the application: every use case bound to its ports. */
const buildApplication = (ports: Ports & ApplicationSettings): Application => ({
  authenticate: authenticate(ports),
  ...(ports.limiter === undefined ? {} : { admit: admitRequest({ limiter: ports.limiter, logger: ports.logger }) }),
  createPlant: createPlant(ports),
  listPlants: listPlants(ports),
  deletePlant: deletePlant(ports),
  checkReadiness: checkReadiness(
    ports.readinessTimeoutMs === undefined ? ports : { ...ports, timeoutMs: ports.readinessTimeoutMs },
  ),
});

/** Already-built adapters in, an HTTP server out (not yet listening): what main, the tests and the bench start. */
export const buildApp = (
  deps: Ports & ApplicationSettings & HttpSettings,
  limits: ServerLimits = defaultServerLimits,
): EdgeServer => {
  const metrics = deps.metrics === undefined ? undefined : boundedMethods(deps.metrics);
  const http = createHttpApp(buildApplication(deps), { ...deps, ...(metrics === undefined ? {} : { metrics }) });
  return createHttpServer(exactDispatch(http), {
    logger: deps.logger,
    limits,
    refused: metrics?.refused,
    cors: deps.cors,
    probes: PROBES,
    bodyLimit: deps.bodyLimit,
  });
};
