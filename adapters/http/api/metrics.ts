import type { Server } from 'node:http';
import type { Logger } from '../../../application/ports/logger.js';
import { requestIdFrom } from '../transport/request-id.js';
import { createHttpServer, type ServerLimits } from '../transport/server.js';

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
  readonly scrape: () => Promise<string>;
}

const errorBody = (status: number, message: string) => JSON.stringify({ error: status, message });

/**
 * The admin listener (METRICS_PORT): `GET /metrics` and nothing else, apart from the API's port, so that the scrape
 * can be reachable where the API is not (and the reverse). Every other path is 404, another method 405. It is the
 * API's own node:http server (server.ts), with the same limits, so that what its parser refuses answers the Error
 * body and X-Request-Id too.
 */
export const metricsServer = (
  exposition: MetricsExposition,
  deps: { readonly logger: Logger; readonly limits: ServerLimits },
): Server =>
  createHttpServer((req, res) => {
    const headers: Record<string, string> = {
      'X-Request-Id': requestIdFrom(req.headers['x-request-id']),
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
    };
    const reply = (status: number, type: string, body: string, extra: Record<string, string> = {}) => {
      res.writeHead(status, { ...headers, ...extra, 'Content-Type': type, 'Content-Length': Buffer.byteLength(body) });
      res.end(body);
    };
    const json = 'application/json; charset=utf-8';
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/metrics') return reply(404, json, errorBody(404, 'no such resource; this port serves /metrics'));
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return reply(405, json, errorBody(405, 'method not allowed here; use GET, HEAD'), { Allow: 'GET, HEAD' });
    exposition.scrape().then(
      (text) => reply(200, exposition.contentType, text),
      () => reply(500, json, errorBody(500, 'internal error')),
    );
  }, deps);
