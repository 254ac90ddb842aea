import { CORS_ALLOWED_HEADERS, CORS_EXPOSED_HEADERS, CORS_MAX_AGE_SECONDS } from '../server/cors.js';

/**
 * The operator-facing part of the OpenAPI document: /metrics and /docs, what browsers need to know about CORS (in
 * words), and tags that group the plant operations apart from the operational ones.
 *
 * The document lists what clients and probes call. Mechanisms a client never calls itself are described in words
 * only: CORS preflights (the browser sends them) and the docs page's own files (the page loads them). As operations
 * they made generated clients grow methods nobody should call, and OPTIONS on a templated path without its
 * parameter made the document invalid.
 */

type PathItem = Record<string, { tags?: string[] } & Record<string, unknown>>;

const ref = (name: string) => ({ $ref: `#/components/${name}` });
const common = {
  'X-Request-Id': ref('headers/X-Request-Id'),
  'Cache-Control': ref('headers/Cache-Control'),
  'X-Content-Type-Options': ref('headers/X-Content-Type-Options'),
};
const otherFailures = { default: ref('responses/OtherFailure') };

/** CORS, as the document's description says it (the preflights are not operations of the document). */
export const CORS_IN_WORDS = [
  '**Browsers (CORS).** Off unless the operator sets CORS_ORIGINS (`*`, or a list of origins). A preflight (OPTIONS',
  'with Origin and Access-Control-Request-Method) from an allowed origin is answered 204 without a token, with',
  `Access-Control-Allow-Methods (the path's methods), Access-Control-Allow-Headers (${CORS_ALLOWED_HEADERS}) and`,
  `Access-Control-Max-Age (${CORS_MAX_AGE_SECONDS}); responses to an allowed origin carry Access-Control-Allow-Origin`,
  `and expose ${CORS_EXPOSED_HEADERS}. Other origins get no CORS field, and their OPTIONS answers 405 like any method`,
  'a path does not have. No credentials mode: the bearer token goes in Authorization.',
].join(' ');

const operationalPaths: Record<string, PathItem> = {
  '/metrics': {
    get: {
      operationId: 'metrics',
      summary: 'Prometheus metrics of this process',
      description:
        "Prometheus text format: requests by method, route template and status, their durations, requests in flight, each backend's availability and call durations, rate-limit refusals, the service's version (plantstore_build_info), and the process and event-loop metrics. It passes `promtool check metrics`. No token: served on this port unless METRICS_PORT names a separate listener for it, in which case this path answers 404 here, for every method.",
      security: [],
      responses: {
        '200': {
          description: 'The metrics, in the Prometheus text exposition format 0.0.4.',
          headers: common,
          content: { 'text/plain': { schema: { type: 'string' } } },
        },
        '404': ref('responses/NotFound'),
        ...otherFailures,
      },
    },
  },
  '/docs': {
    get: {
      operationId: 'docs',
      summary: 'This reference as a web page',
      description:
        'Renders /openapi.json with Swagger UI, from files served by the service itself under /docs/ (works offline), under a Content-Security-Policy that allows this origin only. The page loads those files itself; they are not operations of this document. /docs/ (with the slash) redirects here (308, `Location: ../docs`).',
      security: [],
      responses: {
        '200': {
          description: 'An HTML page.',
          headers: {
            ...common,
            'Content-Security-Policy': { required: true, schema: { type: 'string' } },
          },
          content: { 'text/html': { schema: { type: 'string' } } },
        },
        '400': ref('responses/MalformedRequest'),
        ...otherFailures,
      },
    },
  },
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
