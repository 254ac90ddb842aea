import type { Server } from 'node:http';
import type { Logger } from '../../../application/ports/logger.js';
import { answerFailure, logRequest, responseFields, type Edge } from './answer.js';
import { requestIdFrom } from './request-id.js';
import { createHttpServer, sharedBody, type ServerLimits } from './server.js';

/** What the HTTP edge reports about every response it sends. */
export interface HttpMetrics {
  /** One response: its method, route template (`GET /plants/{id}`, `unknown`), status and duration. */
  readonly observe: (method: string, route: string, status: number, seconds: number) => void;
  /** A request answered before it reached a route (server.ts): its method when one was read, and the status. */
  readonly refused?: (method: string | undefined, status: number) => void;
}

/** The methods some route of the service serves. */
const SERVED_METHODS = new Set(['GET', 'HEAD', 'POST', 'DELETE', 'OPTIONS']);

/**
 * The same metrics with any other method labelled `other`: the method is the client's choice, and each one on each
 * route and status would add a histogram's series to every scrape.
 */
export const boundedMethods = (metrics: HttpMetrics): HttpMetrics => {
  const label = (method: string): string => (SERVED_METHODS.has(method) ? method : 'other');
  const { refused } = metrics;
  return {
    observe: (method, route, status, seconds) => metrics.observe(label(method), route, status, seconds),
    ...(refused === undefined
      ? {}
      : { refused: (method, status) => refused(method === undefined ? undefined : label(method), status) }),
  };
};

/** The Prometheus text exposition of every metric of the process. */
export interface MetricsExposition {
  readonly contentType: string;
  readonly scrape: () => Promise<string | Buffer>;
}

/**
 * The scrapes of one turn of the event loop share one rendering (milliseconds of CPU each), counted once against the
 * unsent-bytes bound (`sharedBody`): connections asking again and again cannot hold every other request for seconds.
 * A scrape reflects every response finished before its rendering began.
 */
export const renderedOncePerTurn = (exposition: MetricsExposition): MetricsExposition => {
  let shared: Promise<Buffer> | undefined;
  return {
    contentType: exposition.contentType,
    scrape: () => {
      if (shared === undefined) {
        shared = exposition.scrape().then((text) => sharedBody(typeof text === 'string' ? Buffer.from(text) : text));
        setImmediate(() => {
          shared = undefined;
        });
      }
      return shared;
    },
  };
};

/**
 * The admin listener (METRICS_PORT): `GET /metrics` and nothing else (404 for other paths, 405 for other methods),
 * so that the scrape can be reachable where the API is not. It is the API's own server (server.ts), with the same
 * limits and answers: each response one `request` log line (with `listener` `metrics`) and one observation.
 */
export const metricsServer = (
  exposition: MetricsExposition,
  deps: { readonly logger: Logger; readonly limits: ServerLimits; readonly metrics?: HttpMetrics | undefined },
): Server => {
  const labelled =
    (write: Logger['info']): Logger['info'] =>
    (fields, message) =>
      write({ ...fields, listener: 'metrics' }, message);
  const logger: Logger = {
    debug: labelled(deps.logger.debug.bind(deps.logger)),
    info: labelled(deps.logger.info.bind(deps.logger)),
    warn: labelled(deps.logger.warn.bind(deps.logger)),
    error: labelled(deps.logger.error.bind(deps.logger)),
  };
  const edge: Edge = { logger };
  const metrics = deps.metrics === undefined ? undefined : boundedMethods(deps.metrics);
  const shared = renderedOncePerTurn(exposition);
  return createHttpServer(
    (req, res) => {
      const startedAt = performance.now();
      const asker = { id: requestIdFrom(req.headers['x-request-id']), origin: undefined };
      const method = req.method ?? 'GET';
      const line = (route: string) => ({ method, route, ms: Math.round((performance.now() - startedAt) * 100) / 100 });
      const observed = (route: string, status: number) =>
        metrics?.observe(method, route, status, (performance.now() - startedAt) / 1000);
      const fail = (route: string, status: number, message: string, headers?: Record<string, string>) =>
        observed(route, answerFailure(edge, res, asker, { status, message, headers }, line(route)));
      if ((req.url ?? '').split('?')[0] !== '/metrics') {
        return fail('unknown', 404, 'no such resource; this port serves /metrics');
      }
      if (method !== 'GET' && method !== 'HEAD') {
        return fail('* /metrics', 405, 'method not allowed here; use GET, HEAD', { Allow: 'GET, HEAD' });
      }
      shared.scrape().then(
        (text) => {
          const headers = { 'Content-Type': shared.contentType };
          res.writeHead(200, responseFields(edge, asker, headers, text)).end(text);
          observed('GET /metrics', 200);
          logRequest(logger, { reqId: asker.id, ...line('GET /metrics'), status: 200 });
        },
        () => fail('GET /metrics', 500, 'internal error'),
      );
    },
    { logger, limits: deps.limits, refused: metrics?.refused },
  );
};
