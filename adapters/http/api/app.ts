import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { stringify } from 'lossless-json';
import polka, { type Request } from 'polka';
import type { Application } from '../../../application/application.js';
import type { Logger } from '../../../application/ports/logger.js';
import type { CorsPolicy } from '../server/cors.js';
import { docsSite } from './docs.js';
import { createPlantHandler } from './handlers/create-plant.js';
import { deletePlantHandler } from './handlers/delete-plant.js';
import { listPlantsHandler } from './handlers/list-plants.js';
import {
  docsAssetHandler,
  docsPageHandler,
  healthHandler,
  metricsHandler,
  openApiHandler,
  readinessHandler,
} from './handlers/operational.js';
import { renderedOncePerTurn, type HttpMetrics, type MetricsExposition } from '../metrics-listener.js';
import { REQUEST_ID } from '../server/request-id.js';
import { openApiDocument } from './openapi.js';
import { authorizer } from './pipeline.js';
import type { RequestTracer } from './request-tracing.js';
import { exchangeOf, responder, type Exchange, type Handler } from './respond.js';

/** What the HTTP edge needs besides the application. */
export interface HttpSettings {
  readonly logger: Logger;
  /** Largest accepted request body, in bytes. */
  readonly bodyLimit: number;
  /** Per-response metrics; none in tests that do not need them. */
  readonly metrics?: HttpMetrics;
  /** GET /metrics on this listener; absent when metrics are served apart (METRICS_PORT) or not at all (404). */
  readonly metricsEndpoint?: MetricsExposition;
  /** CORS for the configured origins; absent: no CORS fields, OPTIONS is 405. */
  readonly cors?: CorsPolicy;
  /** A server span per request (OpenTelemetry, when OTEL_* turns it on); absent: no tracing, no cost. */
  readonly tracer?: RequestTracer;
}

// Exact, case-sensitive paths (polka's string patterns ignore case and a trailing slash).
const HEALTHZ = /^\/healthz$/;
const READYZ = /^\/readyz$/;
/** The probes' paths: answered in a few bytes, so the server begins them even past its unsent bound. */
export const PROBES = ['/healthz', '/readyz'];
const OPENAPI = /^\/openapi\.json$/;
const PLANTS = /^\/plants$/;
const PLANT = /^\/plants\/(?<id>[^/]*)$/;
const METRICS = /^\/metrics$/;
const DOCS = /^\/docs\/?$/; // /docs/ redirects to /docs (docsPageHandler)
const DOCS_ASSET = /^\/docs\/(?<asset>[^/]+)$/;

/** The routes of the service over the application: no business rule and no port is in reach here. */
export const createHttpApp = (app: Application, settings: HttpSettings) => {
  const { logger, bodyLimit, cors } = settings;
  const respond = responder({ logger, metrics: settings.metrics, cors });
  const authorize = authorizer(app, respond);

  const { tracer } = settings;
  /** Runs a route's handler on its exchange, inside the request's span when tracing is on. */
  const traced: (exchange: Exchange, handle: () => Promise<void> | void) => Promise<void> | void =
    tracer === undefined
      ? (_, handle) => handle()
      : (exchange, handle) =>
          tracer.serve(exchange, (trace) => {
            exchange.trace = trace;
            return handle();
          });
  const named =
    tracer === undefined
      ? (route: string, handler: Handler) =>
          (req: Request, res: ServerResponse): Promise<void> | void => {
            // exchangeOf's stamp, written out: one call fewer on every request.
            const exchange = req as Exchange;
            const given = req.headers['x-request-id'];
            exchange.startedAt = performance.now();
            exchange.id = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
            exchange.route = route;
            return handler(exchange, res);
          }
      : (route: string, handler: Handler) =>
          (req: Request, res: ServerResponse): Promise<void> | void => {
            const exchange = exchangeOf(req, route);
            return traced(exchange, () => handler(exchange, res));
          };
  /** Any other method: 405 with Allow; an OPTIONS preflight from an allowed origin gets its CORS answer instead. */
  const methodNotAllowed = (path: string, allow: string) =>
    named(`* ${path}`, (req, res) => {
      const preflight = req.method === 'OPTIONS' ? cors?.preflight(req.headers, allow) : undefined;
      if (preflight === undefined) return respond.fail(req, res, undefined, { _tag: 'MethodNotAllowed', allow });
      req.route = `OPTIONS ${path}`;
      respond.send(req, res, undefined, 204, undefined, preflight);
    });

  const openApiJson = stringify(openApiDocument({ bodyLimit })) as string;
  const docs = docsSite();

  const routes = polka({
    onNoMatch: (req, res) => {
      const exchange = exchangeOf(req, 'unknown');
      return traced(exchange, () => respond.fail(exchange, res, undefined, { _tag: 'RouteNotFound' }));
    },
    onError: (err, req, res) => {
      const exchange = exchangeOf(req, (req as Partial<Exchange>).route ?? 'unknown');
      logger.error({ reqId: exchange.id, err }, 'unexpected fault');
      respond.fail(exchange, res, undefined, { _tag: 'InternalError' });
    },
  })
    .get(HEALTHZ, named('GET /healthz', healthHandler(respond)))
    .all(HEALTHZ, methodNotAllowed('/healthz', 'GET, HEAD'))
    .get(READYZ, named('GET /readyz', readinessHandler(app, respond)))
    .all(READYZ, methodNotAllowed('/readyz', 'GET, HEAD'))
    .get(OPENAPI, named('GET /openapi.json', openApiHandler(openApiJson, respond)))
    .all(OPENAPI, methodNotAllowed('/openapi.json', 'GET, HEAD'))
    .get(DOCS, named('GET /docs', docsPageHandler(docs, respond)))
    .all(DOCS, methodNotAllowed('/docs', 'GET, HEAD'))
    .get(DOCS_ASSET, named('GET /docs/{asset}', docsAssetHandler(docs, respond)))
    .all(DOCS_ASSET, methodNotAllowed('/docs/{asset}', 'GET, HEAD'))
    .get(PLANTS, named('GET /plants', listPlantsHandler(app, respond, authorize)))
    .post(PLANTS, named('POST /plants', createPlantHandler(app, respond, authorize, bodyLimit)))
    .all(PLANTS, methodNotAllowed('/plants', 'GET, HEAD, POST'))
    .delete(PLANT, named('DELETE /plants/{id}', deletePlantHandler(app, respond, authorize)))
    .all(PLANT, methodNotAllowed('/plants/{id}', 'DELETE'));
  // Served here unless METRICS_PORT serves it apart: then /metrics is no resource of this port, for every method.
  if (settings.metricsEndpoint !== undefined) {
    routes
      .get(METRICS, named('GET /metrics', metricsHandler(renderedOncePerTurn(settings.metricsEndpoint), respond)))
      .all(METRICS, methodNotAllowed('/metrics', 'GET, HEAD'));
  }
  return routes;
};
