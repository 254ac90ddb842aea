import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';

/** What the HTTP edge reports about every response it sends. */
export interface HttpMetrics {
  /** One response: its method, route template (`GET /plants/{id}`, `unknown`), status and duration. */
  readonly observe: (method: string, route: string, status: number, seconds: number) => void;
}

/** The Prometheus text exposition of every metric of the process. */
export interface MetricsExposition {
  readonly contentType: string;
  readonly scrape: () => Promise<string>;
}

const errorBody = (status: number, message: string) => JSON.stringify({ error: status, message });

/**
 * The admin listener (METRICS_PORT): `GET /metrics` and nothing else, apart from the API's port, so that the scrape
 * can be reachable where the API is not (and the reverse). Every other path is 404, another method 405.
 */
export const metricsServer = (exposition: MetricsExposition): Server =>
  createServer((req, res) => {
    const headers: Record<string, string> = {
      'x-request-id': randomUUID(),
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
    };
    const reply = (status: number, type: string, body: string, extra: Record<string, string> = {}) => {
      res.writeHead(status, { ...headers, ...extra, 'content-type': type, 'content-length': Buffer.byteLength(body) });
      res.end(body);
    };
    const json = 'application/json; charset=utf-8';
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/metrics') return reply(404, json, errorBody(404, 'no such resource; this port serves /metrics'));
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return reply(405, json, errorBody(405, 'method not allowed here; use GET, HEAD'), { allow: 'GET, HEAD' });
    exposition.scrape().then(
      (text) => reply(200, exposition.contentType, text),
      () => reply(500, json, errorBody(500, 'internal error')),
    );
  });
