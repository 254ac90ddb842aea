import type { Server } from 'node:http';
import type { Logger } from '../../../application/ports/logger.js';
import { requestIdFrom } from './request-id.js';
import { createHttpServer, sharedBody, type ServerLimits } from './server.js';

/** What the HTTP edge reports about every response it sends. */
export interface HttpMetrics {
  /** One response: its method, route template (`GET /plants/{id}`, `unknown`), status and duration. */
  readonly observe: (method: string, route: string, status: number, seconds: number) => void;
  /**
   * A request answered before it reached a route (malformed HTTP, a bad Host, a timeout, a refused Expect, CONNECT):
   * its method when the parser read one, and the status.
   */
  readonly refused?: (method: string | undefined, status: number) => void;
}

/** The methods some route of the service serves. */
const SERVED_METHODS = new Set(['GET', 'HEAD', 'POST', 'DELETE', 'OPTIONS']);

/**
 * The same metrics with any other method (PROPFIND, PURGE, PUT, ... Node's parser knows over thirty) labelled `other`:
 * the method is the client's choice, and each method on each route and status would add a histogram's series to
 * every scrape (one client sending each method to each path grew a scrape from 178 lines to over 5,700).
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
 * The exposition with the scrapes read in one turn of the event loop sharing one rendering, encoded once. Rendering
 * costs milliseconds (every metric collected, the histograms merged, the text built; prom-client's handle and resource
 * counts walk every open socket), and no token is needed for /metrics where it is served on PORT: connections each
 * asking again as soon as answered, each with a rendering of its own, would hold every other request for seconds.
 * Shared, a turn pays one rendering however many ask, and its bytes are counted once against the
 * unsent-bytes bound (`sharedBody`). A scrape reflects every response finished before the rendering it shares began:
 * one begun in its own turn, or in the check phase just before it (a scrape that waited behind another response on
 * its connection is served there), so it can miss only a response finished in between, never one finished earlier.
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

const errorBody = (status: number, message: string) => JSON.stringify({ error: status, message });

/**
 * The admin listener (METRICS_PORT): `GET /metrics` and nothing else, apart from the API's port, so that the scrape
 * can be reachable where the API is not (and the reverse). Every other path is 404, another method 405. It is the
 * API's own node:http server (server.ts), with the same limits, so that what its parser refuses answers the Error
 * body and X-Request-Id too; and like the API's, each of its responses is one `request` log line (with `listener`
 * `metrics`) and one observation in `metrics` (routes `GET /metrics`, `* /metrics`, `unknown`), and what its parser
 * refuses is counted too.
 */
export const metricsServer = (
  exposition: MetricsExposition,
  deps: { readonly logger: Logger; readonly limits: ServerLimits; readonly metrics?: HttpMetrics | undefined },
): Server => {
  // Every line of this listener says so, also those its parser's refusals write (server.ts).
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
  const metrics = deps.metrics === undefined ? undefined : boundedMethods(deps.metrics);
  const shared = renderedOncePerTurn(exposition);
  return createHttpServer(
    (req, res) => {
      const startedAt = performance.now();
      const reqId = requestIdFrom(req.headers['x-request-id']);
      const method = req.method ?? 'GET';
      const headers: Record<string, string> = {
        'X-Request-Id': reqId,
        'Cache-Control': 'no-store',
        'X-Content-Type-Options': 'nosniff',
      };
      const reply = (
        route: string,
        status: number,
        type: string,
        body: string | Buffer,
        extra: Record<string, string> = {},
      ) => {
        res.writeHead(status, {
          ...headers,
          ...extra,
          'Content-Type': type,
          'Content-Length': Buffer.byteLength(body),
        });
        res.end(body);
        const ms = performance.now() - startedAt;
        metrics?.observe(method, route, status, ms / 1000);
        logger.info({ reqId, method, route, status, ms: Math.round(ms * 100) / 100 }, 'request');
      };
      const json = 'application/json; charset=utf-8';
      const path = (req.url ?? '').split('?')[0];
      if (path !== '/metrics') {
        return reply('unknown', 404, json, errorBody(404, 'no such resource; this port serves /metrics'));
      }
      if (method !== 'GET' && method !== 'HEAD') {
        return reply('* /metrics', 405, json, errorBody(405, 'method not allowed here; use GET, HEAD'), {
          Allow: 'GET, HEAD',
        });
      }
      shared.scrape().then(
        (text) => reply('GET /metrics', 200, shared.contentType, text),
        () => reply('GET /metrics', 500, json, errorBody(500, 'internal error')),
      );
    },
    { logger, limits: deps.limits, refused: metrics?.refused },
  );
};
