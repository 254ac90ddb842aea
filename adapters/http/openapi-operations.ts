import { CORS_ALLOWED_HEADERS, CORS_EXPOSED_HEADERS, CORS_MAX_AGE_SECONDS } from './cors.js';

/**
 * The operator-facing part of the OpenAPI document: /metrics, /docs and its assets, the CORS preflight (OPTIONS) of
 * every path, and tags that group the plant operations apart from the operational ones.
 */

type PathItem = Record<string, { tags?: string[] } & Record<string, unknown>>;

const ref = (name: string) => ({ $ref: `#/components/${name}` });
const common = {
  'X-Request-Id': ref('headers/X-Request-Id'),
  'Cache-Control': ref('headers/Cache-Control'),
  'X-Content-Type-Options': ref('headers/X-Content-Type-Options'),
};
const internalError = { '500': ref('responses/InternalError') };

const preflight = {
  summary: 'CORS preflight',
  description: `Only when CORS_ORIGINS is configured and the request is a preflight (Origin and Access-Control-Request-Method) from an allowed origin: 204 with Access-Control-Allow-Origin, Access-Control-Allow-Methods (this path's methods), Access-Control-Allow-Headers (${CORS_ALLOWED_HEADERS}) and Access-Control-Max-Age (${CORS_MAX_AGE_SECONDS}). No token is needed. Otherwise 405, as for any method the path does not have. Responses to an allowed origin expose ${CORS_EXPOSED_HEADERS}; other origins get no CORS fields.`,
  tags: ['cors'],
  security: [],
  responses: {
    '204': {
      description: 'The preflight is answered; no body.',
      headers: {
        ...common,
        'Access-Control-Allow-Origin': { required: true, schema: { type: 'string' } },
        'Access-Control-Allow-Methods': { required: true, schema: { type: 'string' } },
        'Access-Control-Allow-Headers': { required: true, schema: { const: CORS_ALLOWED_HEADERS } },
        'Access-Control-Max-Age': { required: true, schema: { const: String(CORS_MAX_AGE_SECONDS) } },
      },
    },
    '405': ref('responses/MethodNotAllowed'),
    ...internalError,
  },
};

const DOCS_ASSETS = ['init.js', 'swagger-ui-bundle.js', 'swagger-ui.css', 'favicon-32x32.png', 'favicon-16x16.png'];

const operationalPaths: Record<string, PathItem> = {
  '/metrics': {
    get: {
      operationId: 'metrics',
      summary: 'Prometheus metrics of this process',
      description:
        "Prometheus text format: requests by method, route template and status, their durations, requests in flight, each backend's availability and call durations, rate-limit refusals, and the process and event-loop metrics. No token: served on this port unless METRICS_PORT names a separate listener for it, in which case this path answers 404 here.",
      security: [],
      responses: {
        '200': {
          description: 'The metrics, in the Prometheus text exposition format 0.0.4.',
          headers: common,
          content: { 'text/plain': { schema: { type: 'string' } } },
        },
        '404': ref('responses/NotFound'),
        ...internalError,
      },
    },
  },
  '/docs': {
    get: {
      operationId: 'docs',
      summary: 'This reference as a web page',
      description:
        'Renders /openapi.json with Swagger UI, from assets served by the service itself (works offline), under a Content-Security-Policy that allows this origin only.',
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
        ...internalError,
      },
    },
  },
  '/docs/{asset}': {
    get: {
      operationId: 'docsAsset',
      summary: 'A file of the docs page',
      security: [],
      parameters: [{ name: 'asset', in: 'path', required: true, schema: { enum: DOCS_ASSETS } }],
      responses: {
        '200': {
          description: 'The file; browsers may keep it for an hour.',
          headers: {
            'X-Request-Id': ref('headers/X-Request-Id'),
            'X-Content-Type-Options': ref('headers/X-Content-Type-Options'),
            'Cache-Control': { required: true, schema: { const: 'public, max-age=3600' } },
          },
          content: {
            'text/javascript': { schema: { type: 'string' } },
            'text/css': { schema: { type: 'string' } },
            'image/png': { schema: { type: 'string', contentMediaType: 'image/png' } },
          },
        },
        '404': ref('responses/NotFound'),
        ...internalError,
      },
    },
  },
};

/** Adds the operational paths, an OPTIONS (CORS preflight) to every path, and tags. */
export const withOperationalPaths = <D extends { readonly paths: Record<string, PathItem> }>(doc: D): D => {
  const paths: Record<string, PathItem> = { ...doc.paths, ...operationalPaths };
  for (const [path, item] of Object.entries(paths)) {
    const tag = path.startsWith('/plants') ? 'plants' : 'operations';
    const tagged: PathItem = {};
    for (const [method, operation] of Object.entries(item)) tagged[method] = { tags: [tag], ...operation };
    const name = path.replace(/[^A-Za-z]+(.)?/g, (_, c: string | undefined) => (c ?? '').toUpperCase());
    paths[path] = { ...tagged, options: { operationId: `preflight${name}`, ...preflight } };
  }
  return {
    ...doc,
    tags: [
      { name: 'plants', description: "Create, list and delete the caller's owner's plants (bearer token)." },
      { name: 'operations', description: 'Health, readiness, this document, metrics and the docs page (no token).' },
      { name: 'cors', description: 'CORS preflights, answered only when CORS_ORIGINS allows the origin.' },
    ],
    paths,
  };
};
