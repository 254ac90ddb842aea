import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import * as E from 'fp-ts/lib/Either.js';
import { stringify } from 'lossless-json';
import polka, { type Request } from 'polka';
import type { Logger } from '../../application/ports/logger.js';
import type { PlantRepository } from '../../application/ports/plant-repository.js';
import type { RateDecision, RateLimiter } from '../../application/ports/rate-limiter.js';
import type { TokenVerifier } from '../../application/ports/token-verifier.js';
import { admitRequest } from '../../application/use-cases/admit-request.js';
import { authenticate } from '../../application/use-cases/authenticate.js';
import { checkReadiness } from '../../application/use-cases/check-readiness.js';
import { createPlant, createPlantScope } from '../../application/use-cases/create-plant.js';
import { deletePlant } from '../../application/use-cases/delete-plant.js';
import { listPlants } from '../../application/use-cases/list-plants.js';
import { requireScope, type Principal } from '../../domain/principal.js';
import { bearerToken } from './auth.js';
import { rejectionReason } from './auth-log.js';
import { isJsonContentType, parseJson, readBody } from './body.js';
import { decodeListQuery, decodeNewPlant, decodePathId } from './codecs.js';
import type { CorsPolicy } from './cors.js';
import { encodeCursor } from './cursor.js';
import { docsSite } from './docs.js';
import { rateLimitHeaders, toResponse, type Failure } from './failures.js';
import type { HttpMetrics, MetricsExposition } from './metrics.js';
import { openApiDocument } from './openapi.js';
import { plantJson, plantsJson } from './plant-json.js';

export interface HttpAppDeps {
  readonly plants: PlantRepository;
  readonly tokens: TokenVerifier;
  readonly logger: Logger;
  /** Largest accepted request body, in bytes. */
  readonly bodyLimit: number;
  /** Per-principal request limits; none when rate limiting is off. */
  readonly limiter?: RateLimiter;
  /** Per-response metrics; none in tests that do not need them. */
  readonly metrics?: HttpMetrics;
  /** GET /metrics on this listener; absent when metrics are served apart (METRICS_PORT) or not at all. */
  readonly metricsEndpoint?: MetricsExposition;
  /** CORS for the configured origins; absent: no CORS fields, OPTIONS is 405. */
  readonly cors?: CorsPolicy;
  /** Bound on a /readyz answer, in ms. */
  readonly readinessTimeoutMs?: number;
}

/** What the app keeps about one exchange, for its headers and its log line. */
interface Exchange extends Request {
  id: string;
  startedAt: number;
  route: string;
  owner?: string;
  rate?: RateDecision;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const JSON_TYPE = 'application/json; charset=utf-8';

// Exact, case-sensitive paths (polka's string patterns ignore case and a trailing slash).
const HEALTHZ = /^\/healthz$/;
const READYZ = /^\/readyz$/;
const OPENAPI = /^\/openapi\.json$/;
const PLANTS = /^\/plants$/;
const PLANT = /^\/plants\/(?<id>[^/]*)$/;
const METRICS = /^\/metrics$/;
const DOCS = /^\/docs$/;
const DOCS_ASSET = /^\/docs\/(?<asset>[^/]+)$/;

/**
 * The HTTP edge of the service: decodes every input, calls a use case, and turns its result into the contract's
 * response. It holds no business rule; those are in application/ and domain/.
 */
export const createHttpApp = (deps: HttpAppDeps) => {
  const { logger } = deps;
  const useCases = {
    authenticate: authenticate(deps),
    createPlant: createPlant(deps),
    listPlants: listPlants(deps),
    deletePlant: deletePlant(deps),
    checkReadiness: checkReadiness(
      deps.readinessTimeoutMs === undefined ? deps : { ...deps, timeoutMs: deps.readinessTimeoutMs },
    ),
    admit: deps.limiter === undefined ? undefined : admitRequest({ limiter: deps.limiter }),
  };
  const openApiJson = stringify(openApiDocument({ bodyLimit: deps.bodyLimit })) as string;
  const { metrics, cors } = deps;
  const docs = docsSite();

  /** Every response leaves through here: common headers, then one log line. */
  const send = (
    req: Exchange,
    res: ServerResponse,
    status: number,
    body: string | Buffer | undefined,
    headers?: Readonly<Record<string, string>>,
  ) => {
    if (res.headersSent || res.destroyed) return;
    // One flat header list and one writeHead: cheaper than a setHeader per field.
    const fields: string[] = ['x-request-id', req.id, 'x-content-type-options', 'nosniff'];
    if (headers?.['cache-control'] === undefined) fields.push('cache-control', 'no-store');
    if (cors !== undefined) cors.addResponseFields(req.headers.origin, fields);
    if (req.rate !== undefined) {
      const rate = rateLimitHeaders(req.rate);
      for (const name in rate) fields.push(name, rate[name] as string);
    }
    if (headers !== undefined) for (const name in headers) fields.push(name, headers[name] as string);
    if (body === undefined) res.writeHead(status, fields).end();
    else {
      if (headers?.['content-type'] === undefined) fields.push('content-type', JSON_TYPE);
      fields.push('content-length', String(Buffer.byteLength(body)));
      res.writeHead(status, fields).end(body);
    }
    const ms = performance.now() - req.startedAt;
    metrics?.observe(req.method ?? 'GET', req.route, status, ms / 1000);
    logger.info(
      { reqId: req.id, method: req.method, route: req.route, status, ms: Math.round(ms * 100) / 100, owner: req.owner },
      'request',
    );
  };

  const fail = (req: Exchange, res: ServerResponse, failure: Failure): void => {
    const { status, message, headers } = toResponse(failure);
    if (status === 401 || status === 403) {
      logger.debug({ reqId: req.id, reason: rejectionReason(failure, req.headers.authorization) }, 'token rejected');
    }
    send(req, res, status, JSON.stringify({ error: status, message }), headers);
  };

  const ok = (req: Exchange, res: ServerResponse, body: string | Buffer, headers?: Readonly<Record<string, string>>) =>
    send(req, res, 200, body, headers);

  /** Authentication comes first, before anything of the request is read; then the principal's rate limit. */
  const principalOf = async (req: Exchange, res: ServerResponse): Promise<Principal | undefined> => {
    const token = bearerToken(req.headers.authorization);
    if (token === undefined) {
      fail(req, res, { _tag: 'MissingCredentials' });
      return undefined;
    }
    const result = await useCases.authenticate(token)();
    if (E.isLeft(result)) {
      fail(req, res, result.left);
      return undefined;
    }
    req.owner = result.right.owner;
    if (useCases.admit !== undefined) {
      const admitted = await useCases.admit(result.right)();
      if (E.isLeft(admitted)) {
        fail(req, res, admitted.left);
        return undefined;
      }
      if (admitted.right._tag === 'Some') req.rate = admitted.right.value;
    }
    return result.right;
  };

  /** Stamps the exchange once: start time and request id (the caller's when valid, else a new one). */
  const begin = (req: Request, route: string): Exchange => {
    const exchange = req as Exchange;
    if ((exchange as Partial<Exchange>).id === undefined) {
      exchange.startedAt = performance.now();
      const given = req.headers['x-request-id'];
      exchange.id = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    }
    exchange.route = route;
    return exchange;
  };

  const named =
    (route: string, handler: (req: Exchange, res: ServerResponse) => Promise<void> | void) =>
    (req: Request, res: ServerResponse) =>
      handler(begin(req, route), res);

  const methodNotAllowed = (path: string, allow: string) =>
    named(`* ${path}`, (req, res) => {
      const preflight = req.method === 'OPTIONS' ? cors?.preflight(req.headers, allow) : undefined;
      if (preflight === undefined) return fail(req, res, { _tag: 'MethodNotAllowed', allow });
      req.route = `OPTIONS ${path}`;
      send(req, res, 204, undefined, preflight);
    });

  const app = polka({
    onNoMatch: (req, res) => {
      fail(begin(req, 'unknown'), res, { _tag: 'RouteNotFound' });
    },
    onError: (err, req, res) => {
      const exchange = begin(req, (req as Partial<Exchange>).route ?? 'unknown');
      logger.error({ reqId: exchange.id, err }, 'unexpected fault');
      fail(exchange, res, { _tag: 'InternalError' });
    },
  });

  app
    .get(
      HEALTHZ,
      named('GET /healthz', (req, res) => ok(req, res, '{"status":"ok"}')),
    )
    .all(HEALTHZ, methodNotAllowed('/healthz', 'GET, HEAD'))
    .get(
      READYZ,
      named('GET /readyz', async (req, res) => {
        const down = await useCases.checkReadiness();
        if (down.length === 0) ok(req, res, '{"status":"ready"}');
        else fail(req, res, { _tag: 'NotReady', down });
      }),
    )
    .all(READYZ, methodNotAllowed('/readyz', 'GET, HEAD'))
    .get(
      OPENAPI,
      named('GET /openapi.json', (req, res) => ok(req, res, openApiJson)),
    )
    .all(OPENAPI, methodNotAllowed('/openapi.json', 'GET, HEAD'))
    .get(
      METRICS,
      named('GET /metrics', async (req, res) => {
        if (deps.metricsEndpoint === undefined) return fail(req, res, { _tag: 'RouteNotFound' });
        const text = await deps.metricsEndpoint.scrape();
        ok(req, res, text, { 'content-type': deps.metricsEndpoint.contentType });
      }),
    )
    .all(METRICS, methodNotAllowed('/metrics', 'GET, HEAD'))
    .get(
      DOCS,
      named('GET /docs', (req, res) => ok(req, res, docs.page.body, docs.page.headers)),
    )
    .all(DOCS, methodNotAllowed('/docs', 'GET, HEAD'))
    .get(
      DOCS_ASSET,
      named('GET /docs/{asset}', (req, res) => {
        const asset = docs.asset(req.params['asset'] ?? '');
        if (asset === undefined) return fail(req, res, { _tag: 'RouteNotFound' });
        ok(req, res, asset.body, asset.headers);
      }),
    )
    .all(DOCS_ASSET, methodNotAllowed('/docs/{asset}', 'GET, HEAD'))
    .get(
      PLANTS,
      named('GET /plants', async (req, res) => {
        const principal = await principalOf(req, res);
        if (principal === undefined) return;
        const query = decodeListQuery(req.query);
        if (E.isLeft(query)) return fail(req, res, query.left);
        const page = await useCases.listPlants(principal, query.right)();
        if (E.isLeft(page)) return fail(req, res, page.left);
        const { plants, next } = page.right;
        ok(
          req,
          res,
          plantsJson(plants),
          next === undefined
            ? undefined
            : { link: `</plants?limit=${next.limit}&cursor=${encodeCursor(next.after)}>; rel="next"` },
        );
      }),
    )
    .post(
      PLANTS,
      named('POST /plants', async (req, res) => {
        const principal = await principalOf(req, res);
        if (principal === undefined) return;
        const allowed = requireScope(principal, createPlantScope);
        if (E.isLeft(allowed)) return fail(req, res, allowed.left);
        if (!isJsonContentType(req.headers['content-type'])) return fail(req, res, { _tag: 'UnsupportedMediaType' });
        const bytes = await readBody(req, deps.bodyLimit);
        if (bytes === undefined) return; // the client went away
        const candidate = E.flatMap(E.flatMap(bytes, parseJson), decodeNewPlant);
        if (E.isLeft(candidate)) return fail(req, res, candidate.left);
        const created = await useCases.createPlant(principal, candidate.right)();
        if (E.isLeft(created)) return fail(req, res, created.left);
        ok(req, res, plantJson(created.right));
      }),
    )
    .all(PLANTS, methodNotAllowed('/plants', 'GET, HEAD, POST'))
    .delete(
      PLANT,
      named('DELETE /plants/{id}', async (req, res) => {
        const principal = await principalOf(req, res);
        if (principal === undefined) return;
        const id = decodePathId(req.params['id']);
        if (E.isLeft(id)) return fail(req, res, id.left);
        const deleted = await useCases.deletePlant(principal, id.right)();
        if (E.isLeft(deleted)) return fail(req, res, deleted.left);
        send(req, res, 204, undefined);
      }),
    )
    .all(PLANT, methodNotAllowed('/plants/{id}', 'DELETE'));

  return app;
};
