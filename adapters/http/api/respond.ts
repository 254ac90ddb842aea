import type { ServerResponse } from 'node:http';
import type { Request } from 'polka';
import type { RateDecision } from '../../../application/application.js';
import type { Logger } from '../../../application/ports/logger.js';
import type { Principal } from '../../../domain/principal.js';
import { rejectionReason } from './auth-log.js';
import { answerFailure, logRequest, responseFields, type Edge, type RequestLine } from '../server/answer.js';
import type { CorsPolicy } from '../server/cors.js';
import { rateLimitHeaders, toResponse, type Failure } from './failures.js';
import type { HttpMetrics } from '../metrics-listener.js';
import { requestIdFrom } from '../server/request-id.js';
import type { RequestTrace } from './request-tracing.js';

/** What the edge stamps on a request when a route takes it: for its headers and its log line. */
export interface Exchange extends Request {
  id: string;
  startedAt: number;
  /** The route template ("DELETE /plants/{id}"): never an id, so it is safe to log and to label by. */
  route: string;
  /** Logged as closed before its answer (see `Responder.closed`). */
  closedLogged?: true;
  /** Its server span, when tracing is on: ended with the answer, its ids in the log line. */
  trace?: RequestTrace;
}

/** Who the pipeline admitted: the owner goes into the log line, the rate decision into the RateLimit fields. */
export interface Caller {
  readonly principal: Principal;
  readonly rate: RateDecision | undefined;
}

export type Handler = (req: Exchange, res: ServerResponse) => Promise<void> | void;

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

/** Every answer names its caller, or `undefined` before admission and on routes without a token. */
export interface Responder {
  /** Every response leaves through here: the contract's fields, one writeHead, one observation, one log line. */
  readonly send: (
    req: Exchange,
    res: ServerResponse,
    caller: Caller | undefined,
    status: number,
    body: string | Buffer | undefined,
    headers?: Readonly<Record<string, string>>,
    /** Why a token was refused (401, 403), for the log line: never the token. */
    rejected?: string,
  ) => void;
  readonly ok: (
    req: Exchange,
    res: ServerResponse,
    caller: Caller | undefined,
    body: string | Buffer,
    headers?: Readonly<Record<string, string>>,
  ) => void;
  readonly fail: (req: Exchange, res: ServerResponse, caller: Caller | undefined, failure: Failure) => void;
  /** Closed before its answer (client gone, shutdown cut): logged and observed as 499, unless answered below app. */
  readonly closed: (req: Exchange, res: ServerResponse, caller: Caller | undefined, answer?: number) => void;
}

/** nginx's status for a request whose connection closed before its response: logged and counted, never sent. */
export const CLOSED_BEFORE_ANSWER = 499;

export interface ResponderSettings {
  readonly logger: Logger;
  /** Per-response metrics; none in tests that do not need them. */
  readonly metrics?: HttpMetrics | undefined;
  /** CORS fields for allowed origins; none when CORS is off. */
  readonly cors?: CorsPolicy | undefined;
}

export const responder = ({ logger, metrics, cors }: ResponderSettings): Responder => {
  const edge: Edge = { logger, cors };
  /** The headers a response carries for its caller: its RateLimit fields when a limit applies, then `headers`. */
  const withRate = (caller: Caller | undefined, headers: Readonly<Record<string, string>> | undefined) =>
    caller?.rate === undefined ? headers : { ...rateLimitHeaders(caller.rate), ...headers };
  /** Observed, the span ended; returns the time taken, in ms to 0.01 for the log line. */
  const finished = (req: Exchange, status: number): number => {
    const ms = performance.now() - req.startedAt;
    metrics?.observe(req.method ?? 'GET', req.route, status, ms / 1000);
    req.trace?.end(req.route, status);
    return Math.round(ms * 100) / 100;
  };

  const closed: Responder['closed'] = (req, res, caller, answer) => {
    if (req.closedLogged === true || res.headersSent) return;
    req.closedLogged = true;
    const ms = finished(req, CLOSED_BEFORE_ANSWER);
    logRequest(logger, {
      reqId: req.id,
      method: req.method,
      route: req.route,
      status: CLOSED_BEFORE_ANSWER,
      answer,
      ms,
      owner: caller?.principal.owner,
      trace_id: req.trace?.traceId,
      span_id: req.trace?.spanId,
    });
  };
  // The hot path, with no call of its own beyond the fields, the write, the observation and the log line.
  const send: Responder['send'] = (req, res, caller, status, body, headers, rejected) => {
    if (res.headersSent) return;
    if (res.destroyed || req.socket.destroyed) return closed(req, res, caller, status);
    const rated = caller?.rate === undefined ? headers : { ...rateLimitHeaders(caller.rate), ...headers };
    res.writeHead(status, responseFields(edge, { id: req.id, origin: req.headers.origin }, rated, body)).end(body);
    const ms = performance.now() - req.startedAt;
    metrics?.observe(req.method ?? 'GET', req.route, status, ms / 1000);
    req.trace?.end(req.route, status);
    const line: RequestLine = {
      reqId: req.id,
      method: req.method,
      route: req.route,
      status,
      ms: Math.round(ms * 100) / 100,
      owner: caller?.principal.owner,
      rejected,
      trace_id: req.trace?.traceId,
      span_id: req.trace?.spanId,
    };
    logger.info(line, 'request');
  };
  return {
    send,
    closed,
    ok: (req, res, caller, body, headers) => send(req, res, caller, 200, body, headers),
    fail: (req, res, caller, failure) => {
      const response = toResponse(failure);
      if (res.headersSent) return;
      // The socket too: one destroyed by the shutdown's cut is not yet reported on the response.
      if (res.destroyed || req.socket.destroyed) return closed(req, res, caller, response.status);
      const asker = { id: req.id, origin: req.headers.origin };
      // Why a token was refused goes in the request's own line (at the default level, with its request id).
      const rejected =
        failure._tag === 'MissingCredentials' || failure._tag === 'InvalidToken' || failure._tag === 'MissingScope'
          ? rejectionReason(failure, req.headers.authorization)
          : undefined;
      const ms = finished(req, response.status);
      answerFailure(
        edge,
        res,
        asker,
        { ...response, headers: withRate(caller, response.headers) },
        {
          method: req.method,
          route: req.route,
          ms,
          owner: caller?.principal.owner,
          rejected,
          trace_id: req.trace?.traceId,
          span_id: req.trace?.spanId,
        },
      );
    },
  };
};
