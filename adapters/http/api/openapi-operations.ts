import { CORS_ALLOWED_HEADERS, CORS_EXPOSED_HEADERS, CORS_MAX_AGE_SECONDS } from '../server/cors.js';

/**
 * The operational paths, CORS in words, and tags. Mechanisms a client never calls (preflights, the docs page's files)
 * are described in words only: as operations they grew generated clients methods nobody should call.
 */

type PathItem = Record<string, { tags?: string[] } & Record<string, unknown>>;

export const ref = (name: string) => ({ $ref: `#/components/${name}` });
/** On every success answer: what a cache and a browser need to know about the representation. */
export const common = {
  'X-Request-Id': ref('headers/X-Request-Id'),
  'Cache-Control': ref('headers/Cache-Control'),
  'X-Content-Type-Options': ref('headers/X-Content-Type-Options'),
};
/** Every other failure (500 and those before routing): one shared `default`, one case in a generated client. */
export const otherFailures = { default: ref('responses/OtherFailure') };

/** CORS, as the document's description says it (the preflights are not operations of the document). */
export const CORS_IN_WORDS = [
  '**Browsers (CORS).** Off unless the operator sets CORS_ORIGINS (`*`, or a list of origins). A preflight (OPTIONS',
  'with Origin and Access-Control-Request-Method) from an allowed origin is answered 204 without a token, with',
  `Access-Control-Allow-Methods (the path's methods), Access-Control-Allow-Headers (${CORS_ALLOWED_HEADERS}) and`,
  `Access-Control-Max-Age (${CORS_MAX_AGE_SECONDS}); responses to an allowed origin carry Access-Control-Allow-Origin`,
  `and expose ${CORS_EXPOSED_HEADERS}. Other origins get no CORS field, and their OPTIONS answers 405 like any method`,
  'a path does not have. No credentials mode: the bearer token goes in Authorization.',
].join(' ');

/**
 * A failure answer: the Error body with a real example, X-Request-Id and its own fields. Cache-Control and nosniff are
 * said once in the description: declared on every status, Go clients parsed them a hundred times over.
 */
export const error = (
  status: number,
  description: string,
  message: string,
  extraHeaders: Record<string, object> = {},
) => ({
  description,
  headers: { 'X-Request-Id': ref('headers/X-Request-Id'), ...extraHeaders },
  content: { 'application/json': { schema: ref('schemas/Error'), example: { error: status, message } } },
});

/** An operation without a 400 of its own still answers malformed HTTP with one (and a 4xx is what linters look for). */
const malformed = { '400': ref('responses/MalformedRequest') };

/** A GET of an operational path: no token, one success answer, and the failures it adds to every path's. */
const get = (
  operationId: string,
  summary: string,
  description: string,
  ok: { readonly description: string; readonly headers?: object; readonly content: object },
  failures: object = malformed,
) => ({
  get: {
    operationId,
    summary,
    description,
    security: [],
    responses: { '200': { headers: common, ...ok }, ...failures, ...otherFailures },
  },
});

const json = (schema: object) => ({ 'application/json': { schema } });

const operationalPaths: Record<string, PathItem> = {
  '/healthz': get(
    'health',
    'Liveness: 200 while the process serves requests',
    'Answers without calling any backend: a failure here means the process itself is not serving.',
    { description: 'The process serves requests.', content: json(ref('schemas/Health')) },
  ),
  '/readyz': get(
    'ready',
    'Readiness: 200 when every configured backend answers',
    'Asks every configured backend (storage, token store) and answers within a bound even when one hangs.',
    { description: 'Every configured backend answers.', content: json(ref('schemas/Ready')) },
    {
      '503': error(
        503,
        'A backend does not answer; `message` names which (storage, token store), never its address.',
        'not ready: storage does not answer',
        { 'Retry-After': ref('headers/Retry-After') },
      ),
      ...malformed,
    },
  ),
  '/openapi.json': get(
    'openapi',
    'This document',
    'The OpenAPI 3.1.0 document of the service, built from the same constants the code enforces.',
    { description: 'The OpenAPI 3.1.0 document.', content: json({ type: 'object' }) },
  ),
  '/metrics': get(
    'metrics',
    'Prometheus metrics of this process',
    "Prometheus text format: requests by method, route template and status, their durations, requests in flight, each backend's availability and call durations, rate-limit refusals, the service's version (plantstore_build_info), and the process and event-loop metrics. It passes `promtool check metrics`. No token: served on this port unless METRICS_PORT names a separate listener for it, in which case this path answers 404 here, for every method.",
    {
      description: 'The metrics, in the Prometheus text exposition format 0.0.4.',
      content: { 'text/plain': { schema: { type: 'string' } } },
    },
    { '404': ref('responses/NotFound') },
  ),
  '/docs': get(
    'docs',
    'This reference as a web page',
    'Renders /openapi.json with Swagger UI, from files served by the service itself under /docs/ (works offline), under a Content-Security-Policy that allows this origin only. The page loads those files itself; they are not operations of this document. /docs/ (with the slash) redirects here (308, `Location: ../docs`).',
    {
      description: 'An HTML page.',
      headers: { ...common, 'Content-Security-Policy': { required: true, schema: { type: 'string' } } },
      content: { 'text/html': { schema: { type: 'string' } } },
    },
  ),
};

/** Adds the operational paths and tags. */
export const withOperationalPaths = <D extends { readonly paths: Record<string, PathItem> }>(doc: D): D => {
  const paths: Record<string, PathItem> = { ...doc.paths, ...operationalPaths };
  for (const [path, item] of Object.entries(paths)) {
    const group = path.startsWith('/plants') ? 'plants' : 'operations';
    const tagged: PathItem = {};
    for (const [method, operation] of Object.entries(item)) tagged[method] = { tags: [group], ...operation };
    paths[path] = tagged;
  }
  return {
    ...doc,
    tags: [
      { name: 'plants', description: "Create, list and delete the caller's owner's plants (bearer token)." },
      { name: 'operations', description: 'Health, readiness, this document, metrics and the docs page (no token).' },
    ],
    paths,
  };
};
