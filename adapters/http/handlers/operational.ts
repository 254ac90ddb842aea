import type { Application } from '../../../application/application.js';
import type { Handler, Responder } from '../respond.js';

/** GET /healthz: the process serves requests. */
export const healthHandler =
  ({ ok }: Responder): Handler =>
  (req, res) =>
    ok(req, res, '{"status":"ok"}');

/** GET /readyz: every configured backend answers now; otherwise 503 naming the ones that do not. */
export const readinessHandler =
  (app: Application, { ok, fail }: Responder): Handler =>
  async (req, res) => {
    const down = await app.checkReadiness();
    if (down.length === 0) ok(req, res, '{"status":"ready"}');
    else fail(req, res, { _tag: 'NotReady', down });
  };

/** GET /openapi.json: the document, serialized once. */
export const openApiHandler =
  (documentJson: string, { ok }: Responder): Handler =>
  (req, res) =>
    ok(req, res, documentJson);
