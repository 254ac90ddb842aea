import type { IncomingMessage, ServerResponse } from 'node:http';
import type { IError, Middleware, Polka, Request } from 'polka';

/** Exact (method, path) pairs remembered at most: every method Node accepts (34) on every exact route (8). */
const MAX_REMEMBERED = 1024;

/** The params of a route without parameters: never written to by a handler, so one object serves every request. */
const NO_PARAMS: Record<string, string> = Object.freeze({});

/**
 * polka's dispatch, with each request routed once and exact routes remembered. polka stays the router: what runs is
 * what its public `find` answers, then its `onNoMatch`, and an error goes to its `onError`. A path routed without
 * parameters (`/plants`) is asked once and remembered (at most MAX_REMEMBERED pairs); any other once per request.
 * It saves polka's query parsing (no route reads `req.query`), its pattern tests and a promise per step: 8 to 17% of
 * a request's CPU (docs/performance.md). The request fields are polka's (`path`, `search`, `url`, `originalUrl`,
 * `params` percent-decoded); test/http/exact-dispatch.test.ts checks it answers as polka does.
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
