import type { ServerResponse } from 'node:http';
import type { Request } from 'polka';
import type { RateDecision } from '../../application/application.js';
import type { Logger } from '../../application/ports/logger.js';
import { rateLimitHeaders, toResponse, type Failure } from './failures.js';
import { requestIdFrom } from './request-id.js';

/** What the edge keeps about one exchange, for its headers and its log line. */
export interface Exchange extends Request {
  id: string;
  startedAt: number;
  /** The route template ("DELETE /plants/{id}"): never an id, so it is safe to log and to label by. */
  route: string;
  owner?: string;
  rate?: RateDecision;
}

export type Handler = (req: Exchange, res: ServerResponse) => Promise<void> | void;

const JSON_TYPE = 'application/json; charset=utf-8';

/** Stamps the exchange once: start time and request id (the caller's when valid, else a new one); names its route. */
export const exchangeOf = (req: Request, route: string): Exchange => {
  const exchange = req as Exchange;
  if ((exchange as Partial<Exchange>).id === undefined) {
    exchange.startedAt = performance.now();
    exchange.id = requestIdFrom(req.headers['x-request-id']);
  }
  exchange.route = route;
  return exchange;
};

export interface Responder {
  /** Every response leaves through here: the common headers, one writeHead, then one log line. */
  readonly send: (
    req: Exchange,
    res: ServerResponse,
    status: number,
    body: string | undefined,
    headers?: Readonly<Record<string, string>>,
  ) => void;
  readonly ok: (req: Exchange, res: ServerResponse, body: string, headers?: Readonly<Record<string, string>>) => void;
  readonly fail: (req: Exchange, res: ServerResponse, failure: Failure) => void;
}

export const responder = (logger: Logger): Responder => {
  const send: Responder['send'] = (req, res, status, body, headers) => {
    if (res.headersSent || res.destroyed) return;
    // One flat header list and one writeHead: cheaper than a setHeader per field.
    const fields: string[] = ['x-request-id', req.id, 'cache-control', 'no-store', 'x-content-type-options', 'nosniff'];
    if (req.rate !== undefined) {
      const rate = rateLimitHeaders(req.rate);
      for (const name in rate) fields.push(name, rate[name] as string);
    }
    if (headers !== undefined) for (const name in headers) fields.push(name, headers[name] as string);
    if (body === undefined) res.writeHead(status, fields).end();
    else {
      fields.push('content-type', JSON_TYPE, 'content-length', String(Buffer.byteLength(body)));
      res.writeHead(status, fields).end(body);
    }
    logger.info(
      {
        reqId: req.id,
        method: req.method,
        route: req.route,
        status,
        ms: Math.round((performance.now() - req.startedAt) * 100) / 100,
        owner: req.owner,
      },
      'request',
    );
  };
  return {
    send,
    ok: (req, res, body, headers) => send(req, res, 200, body, headers),
    fail: (req, res, failure) => {
      const { status, message, headers } = toResponse(failure);
      send(req, res, status, JSON.stringify({ error: status, message }), headers);
    },
  };
};
