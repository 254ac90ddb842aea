import type { IncomingMessage, ServerResponse } from 'node:http';
import type { IError, Middleware, Polka, Request } from 'polka';

/**
 * Exact (method, path) pairs remembered at most; past it, requests are still routed, just looked up each time.
 * Room for every method Node's parser accepts (34) on every exact route (8 today): a client that sends odd methods
 * first cannot keep `GET /plants` off the shortcut.
 */
const MAX_REMEMBERED = 1024;

/** The params of a route without parameters: never written to by a handler, so one object serves every request. */
const NO_PARAMS: Record<string, string> = Object.freeze({});

/**
 * polka's dispatch, with each request routed once and exact routes remembered. polka stays the router: what runs for
 * a method and path is what polka's `find` answers for them, then polka's `onNoMatch`, and an error thrown or rejected
 * goes to polka's `onError`, as in polka's own handler. For a path that polka routes without parameters (`/plants`,
 * `/healthz`, ...) the answer is asked once and remembered (at most MAX_REMEMBERED pairs, so hostile paths cannot grow
 * the memory); any other path (`/plants/{id}`, one no route matches) is asked once per request, and that one answer is
 * what runs.
 *
 * What it saves per request, against polka's handler: parsing the query string into `req.query` (querystring: no
 * route reads it; GET /plants reads the whole of `req.search`, see codecs.ts), testing the request against every
 * route's pattern in turn (exact routes), and the promise per handler step. The request fields are polka's:
 * `req.path`, `req.search`, `req.url` and `req.originalUrl` (without a fragment), and `req.params` (percent-decoded
 * where the path has a `%`, as polka decodes them).
 *
 * It stays beside polka's handler because it pays 8 to 17% of a request's CPU (docs/performance.md). It uses polka's public `find`, `onError` and `onNoMatch` only; test/http/exact-dispatch.test.ts
 * checks it answers as polka does, and routes each request once.
 */
export const exactDispatch = <T extends Request>(app: Polka<T>) => {
  /** method → path → the route's handlers followed by onNoMatch, as polka would run them. */
  const remembered = new Map<string, Map<string, ReadonlyArray<Middleware<T>>>>();
  let size = 0;

  return (incoming: IncomingMessage, res: ServerResponse): void => {
    const req = incoming as T;
    let url = req.url;
    // As polka's URL parser (@polka/url): a fragment, then a query, each only after the first character.
    const hash = url.indexOf('#', 1);
    if (hash >= 0) url = url.slice(0, hash);
    const query = url.indexOf('?', 1);
    const path = query < 0 ? url : url.slice(0, query);
    req.path = path;
    req.search = query < 0 ? '' : url.slice(query);
    req.url = url;
    req.originalUrl = req.originalUrl || url;

    const byPath = remembered.get(req.method);
    let chain = byPath?.get(path);
    let params = NO_PARAMS;
    if (chain === undefined) {
      const found = app.find(req.method as Parameters<Polka<T>['find']>[0], path);
      chain = [...found.handlers, app.onNoMatch];
      if (Object.keys(found.params).length > 0) {
        params = found.params;
        if (path.length > 1 && path.indexOf('%', 1) !== -1) {
          for (const key in params) {
            try {
              params[key] = decodeURIComponent(params[key] as string);
            } catch {
              // A malformed escape stays as it was sent, as polka leaves it.
            }
          }
        }
      } else if (found.handlers.length > 0 && size < MAX_REMEMBERED) {
        if (byPath === undefined) remembered.set(req.method, new Map([[path, chain]]));
        else byPath.set(path, chain);
        size += 1;
      }
    }
    req.params = params;
    // The chain runs as in polka; its first step is called here rather than through `next`, one call fewer.
    const steps = chain;
    let step = 0;
    const next = (err?: string | IError): void => {
      if (err !== undefined) return void app.onError(err, req, res, next);
      if (res.writableEnded || step >= steps.length) return;
      try {
        const running = (steps[step++] as Middleware<T>)(req, res, next);
        if (running instanceof Promise) running.catch(next);
      } catch (e) {
        next(e as IError);
      }
    };
    try {
      const running = (steps[step++] as Middleware<T>)(req, res, next);
      if (running instanceof Promise) running.catch(next);
    } catch (e) {
      next(e as IError);
    }
  };
};
