import { readFileSync } from 'node:fs';
import { sharedBody } from '../server/unsent.js';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/**
 * GET /docs: a human-readable API reference, rendered in the browser by Swagger UI (swagger-ui-dist, installed from
 * npm and served from this process: no CDN, works offline) from the service's own /openapi.json. Swagger UI 5 renders
 * OpenAPI 3.1. Its online validator badge is off (`validatorUrl: null`), so the page calls nothing but this service,
 * and the page runs under a Content-Security-Policy that allows scripts, styles and requests to this origin only
 * (no inline script; images also as data: URLs, which Swagger UI uses for its icons).
 */

export interface DocsResponse {
  readonly body: string | Buffer;
  readonly headers: Readonly<Record<string, string>>;
}

export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

// URLs relative to the page (/docs), so the page also works behind a path prefix.
const PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>Plant Store API</title>
    <link rel="icon" type="image/png" href="docs/favicon-32x32.png" sizes="32x32">
    <link rel="stylesheet" href="docs/swagger-ui.css">
  </head>
  <body>
    <div id="swagger-ui"></div>
    <script src="docs/swagger-ui-bundle.js"></script>
    <script src="docs/init.js"></script>
  </body>
</html>
`;

const INIT = `window.ui = SwaggerUIBundle({
  url: 'openapi.json',
  dom_id: '#swagger-ui',
  validatorUrl: null,
  deepLinking: true,
  defaultModelsExpandDepth: 0,
  presets: [SwaggerUIBundle.presets.apis],
  layout: 'BaseLayout',
});
`;

const TYPES: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
  'favicon-16x16.png': 'image/png',
};

/** Assets change only with the installed swagger-ui-dist; a browser may keep them for an hour. */
const ASSET_CACHE = 'public, max-age=3600';

export const docsSite = () => {
  const distDir = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  const loaded = new Map<string, DocsResponse>();
  const page: DocsResponse = {
    body: PAGE,
    headers: {
      'Content-Type': 'text/html; charset=utf-8',
      'Content-Security-Policy': DOCS_CSP,
      'Referrer-Policy': 'no-referrer',
      'X-Frame-Options': 'DENY',
    },
  };
  const init: DocsResponse = {
    body: INIT,
    headers: { 'Content-Type': 'text/javascript; charset=utf-8', 'Cache-Control': ASSET_CACHE },
  };
  return {
    page,
    /** One of the few files the page loads, read once on first use; undefined for any other name. */
    asset: (name: string): DocsResponse | undefined => {
      if (name === 'init.js') return init;
      const type = Object.hasOwn(TYPES, name) ? TYPES[name] : undefined;
      if (type === undefined) return undefined;
      let found = loaded.get(name);
      if (found === undefined) {
        found = {
          // Sent as is to every client that asks: counted once by the unsent-bytes bound, however many hold it.
          body: sharedBody(readFileSync(join(distDir, name))),
          headers: { 'Content-Type': type, 'Cache-Control': ASSET_CACHE },
        };
        loaded.set(name, found);
      }
      return found;
    },
  };
};
