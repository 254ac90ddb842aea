import type { Server } from 'node:http';
import { createHttpApp, type HttpAppDeps } from '../adapters/http/app.js';
import { createHttpServer, defaultServerLimits, type ServerLimits } from '../adapters/http/server.js';

/**
 * The composition root of the HTTP service: already-built adapters in, an HTTP server out (not yet listening).
 * No I/O happens here, so tests build the real app over in-memory adapters in one line.
 */
export const buildApp = (deps: HttpAppDeps, limits: ServerLimits = defaultServerLimits): Server => {
  const app = createHttpApp(deps);
  return createHttpServer(
    (req, res) => void app.handler(req as Parameters<typeof app.handler>[0], res, undefined as never),
    { logger: deps.logger, limits },
  );
};
