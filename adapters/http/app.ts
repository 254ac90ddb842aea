import type { ServerResponse } from 'node:http';
import { stringify } from 'lossless-json';
import polka, { type Request } from 'polka';
import type { Application } from '../../application/application.js';
import type { Logger } from '../../application/ports/logger.js';
import { createPlantHandler } from './handlers/create-plant.js';
import { deletePlantHandler } from './handlers/delete-plant.js';
import { listPlantsHandler } from './handlers/list-plants.js';
import { healthHandler, openApiHandler, readinessHandler } from './handlers/operational.js';
import { openApiDocument } from './openapi.js';
import { authorizer } from './pipeline.js';
import { exchangeOf, responder, type Exchange, type Handler } from './respond.js';

/** What the HTTP edge needs besides the application. */
export interface HttpSettings {
  readonly logger: Logger;
  /** Largest accepted request body, in bytes. */
  readonly bodyLimit: number;
}

// Exact, case-sensitive paths (polka's string patterns ignore case and a trailing slash).
const HEALTHZ = /^\/healthz$/;
const READYZ = /^\/readyz$/;
const OPENAPI = /^\/openapi\.json$/;
const PLANTS = /^\/plants$/;
const PLANT = /^\/plants\/(?<id>[^/]*)$/;

/**
 * The HTTP edge: the routes of the service over the application. Each route names its template, runs its one
 * handler, and answers through the one responder; no business rule lives here (those are in application/ and
 * domain/), and no port is in reach (bootstrap/ binds them).
 */
export const createHttpApp = (app: Application, { logger, bodyLimit }: HttpSettings) => {
  const respond = responder(logger);
  const authorize = authorizer(app, respond);

  const named =
    (route: string, handler: Handler) =>
    (req: Request, res: ServerResponse): Promise<void> | void =>
      handler(exchangeOf(req, route), res);
  const methodNotAllowed = (path: string, allow: string) =>
    named(`* ${path}`, (req, res) => respond.fail(req, res, { _tag: 'MethodNotAllowed', allow }));

  const openApiJson = stringify(openApiDocument({ bodyLimit })) as string;

  return polka({
    onNoMatch: (req, res) => respond.fail(exchangeOf(req, 'unknown'), res, { _tag: 'RouteNotFound' }),
    onError: (err, req, res) => {
      const exchange = exchangeOf(req, (req as Partial<Exchange>).route ?? 'unknown');
      logger.error({ reqId: exchange.id, err }, 'unexpected fault');
      respond.fail(exchange, res, { _tag: 'InternalError' });
    },
  })
    .get(HEALTHZ, named('GET /healthz', healthHandler(respond)))
    .all(HEALTHZ, methodNotAllowed('/healthz', 'GET, HEAD'))
    .get(READYZ, named('GET /readyz', readinessHandler(app, respond)))
    .all(READYZ, methodNotAllowed('/readyz', 'GET, HEAD'))
    .get(OPENAPI, named('GET /openapi.json', openApiHandler(openApiJson, respond)))
    .all(OPENAPI, methodNotAllowed('/openapi.json', 'GET, HEAD'))
    .get(PLANTS, named('GET /plants', listPlantsHandler(app, respond, authorize)))
    .post(PLANTS, named('POST /plants', createPlantHandler(app, respond, authorize, bodyLimit)))
    .all(PLANTS, methodNotAllowed('/plants', 'GET, HEAD, POST'))
    .delete(PLANT, named('DELETE /plants/{id}', deletePlantHandler(app, respond, authorize)))
    .all(PLANT, methodNotAllowed('/plants/{id}', 'DELETE'));
};
