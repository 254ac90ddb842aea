import type { Application } from '../../../../application/application.js';
import type { docsSite } from '../docs.js';
import type { MetricsExposition } from '../../metrics-listener.js';
import type { Handler, Responder } from '../respond.js';

/** GET /healthz: the process serves requests. */
export const healthHandler =
  ({ ok }: Responder): Handler =>
  (req, res) =>
    ok(req, res, undefined, '{"status":"ok"}');

/** GET /readyz: every configured backend answers now; otherwise 503 naming the ones that do not. */
export const readinessHandler =
  (app: Application, { ok, fail }: Responder): Handler =>
  async (req, res) => {
    const down = await app.checkReadiness();
    if (down.length === 0) ok(req, res, undefined, '{"status":"ready"}');
    else fail(req, res, undefined, { _tag: 'NotReady', down });
  };

/** GET /openapi.json: the document, serialized once. */
export const openApiHandler =
  (documentJson: string, { ok }: Responder): Handler =>
  (req, res) =>
    ok(req, res, undefined, documentJson);

/** GET /metrics: the Prometheus text (routed only when served on this listener). */
export const metricsHandler =
  (endpoint: MetricsExposition, { ok }: Responder): Handler =>
  async (req, res) => {
    ok(req, res, undefined, await endpoint.scrape(), { 'Content-Type': endpoint.contentType });
  };

type Docs = ReturnType<typeof docsSite>;

/** GET /docs; /docs/ redirects to it, relatively, so the page's relative URLs and a path prefix both hold. */
export const docsPageHandler =
  (docs: Docs, { ok, send }: Responder): Handler =>
  (req, res) =>
    req.path.endsWith('/')
      ? send(req, res, undefined, 308, undefined, { Location: '../docs' })
      : ok(req, res, undefined, docs.page.body, docs.page.headers);

/** GET /docs/{asset}: the page's own scripts and styles, installed from npm (no CDN). */
export const docsAssetHandler =
  (docs: Docs, { ok, fail }: Responder): Handler =>
  (req, res) => {
    const asset = docs.asset(req.params['asset'] ?? '');
    if (asset === undefined) return fail(req, res, undefined, { _tag: 'RouteNotFound' });
    ok(req, res, undefined, asset.body, asset.headers);
  };
