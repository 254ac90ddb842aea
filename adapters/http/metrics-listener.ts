import type { Logger } from '../../application/ports/logger.js';
import { answerFailure, logRequest, responseFields, type Edge } from './server/answer.js';
import { requestIdFrom } from './server/request-id.js';
import { createHttpServer, sharedBody, type EdgeServer, type ServerLimits } from './server/server.js';

/** What the HTTP edge reports about every response it sends. */
export interface HttpMetrics {
  /** One response: its method, route template (`GET /plants/{id}`, `unknown`), status and duration. */
  readonly observe: (method: string, route: string, status: number, seconds: number) => void;
  /** A request answered before it reached a route (server.ts): its method when one was read, and the status. */
  readonly refused?: (method: string | undefined, status: number) => void;
}

const SERVED_METHODS = new Set(['GET', 'HEAD', 'POST', 'DELETE', 'OPTIONS']);

/** Any method no route serves labelled `other`: each would add a histogram's series to every scrape. */
export const boundedMethods = ({ observe, refused }: HttpMetrics): HttpMetrics => ({
  observe: (method, route, status, seconds) =>
    observe(SERVED_METHODS.has(method) ? method : 'other', route, status, seconds),
  refused: (method, status) => refused?.(method === undefined || SERVED_METHODS.has(method) ? method : 'other', status),
});

/** The Prometheus text exposition of every metric of the process. */
export interface MetricsExposition {
  readonly contentType: string;
  readonly scrape: () => Promise<string | Buffer>;
}

/** The scrapes of one turn share one rendering, counted once by the unsent bound. */
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

/** The admin listener (METRICS_PORT): `GET /metrics` only, each response logged and observed. */
export const metricsServer = (
  exposition: MetricsExposition,
  deps: { readonly logger: Logger; readonly limits: ServerLimits; readonly metrics?: HttpMetrics | undefined },
): EdgeServer => {
  // Every line of this listener says so, its parser's refusals' too.
  const logger = Object.fromEntries(
    (['debug', 'info', 'warn', 'error'] as const).map((level) => [
      level,
      (fields: object, message: string) => deps.logger[level]({ ...fields, listener: 'metrics' }, message),
    ]),
  ) as unknown as Logger;
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
      if ((req.url ?? '').split('?')[0] !== '/metrics')
        return fail('unknown', 404, 'no such resource; this port serves /metrics');
      if (method !== 'GET' && method !== 'HEAD') {
        return fail('* /metrics', 405, 'method not allowed here; use GET, HEAD', { Allow: 'GET, HEAD' });
      }
      shared.scrape().then(
        (text) => {
          res.writeHead(200, responseFields(edge, asker, { 'Content-Type': shared.contentType }, text)).end(text);
          observed('GET /metrics', 200);
          logRequest(logger, { reqId: asker.id, ...line('GET /metrics'), status: 200 });
        },
        () => fail('GET /metrics', 500, 'internal error'),
      );
    },
    { logger, limits: deps.limits, refused: metrics?.refused },
  );
};
