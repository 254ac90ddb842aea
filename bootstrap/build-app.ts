import { createServer, type Server } from 'node:http';
import { createHttpApp, type HttpAppDeps } from '../adapters/http/app.js';

/**
 * The composition root of the HTTP service: already-built adapters in, an HTTP server out (not yet listening).
 * No I/O happens here, so tests build the real app over in-memory adapters in one line.
 */
export const buildApp = (deps: HttpAppDeps): Server => {
  const app = createHttpApp(deps);
  const server = createServer(
    (req, res) => void app.handler(req as Parameters<typeof app.handler>[0], res, undefined as never),
  );
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  return server;
};
