import { ServerResponse, type IncomingMessage } from 'node:http';

/**
 * What the server's responses carry for the transport's bounds, on a ServerResponse class of each server's own
 * (node:http's `ServerResponse` option): the server's budget of request-body bytes, on the class's prototype (nothing
 * per request), and the shared body a response was ended with, if any.
 */
export interface BoundedResponse extends ServerResponse {
  /** Request-body bytes held in memory by all the server's requests together; absent outside createHttpServer. */
  readonly bodyBudget?: ByteBudget;
  /** The body this response was ended with, when it is a shared Buffer (see `sharedBody`). */
  sharedBody?: Buffer;
}

/** A count of bytes held across connections, against a bound. */
export interface ByteBudget {
  /** Counts `bytes` in and says true, or says false and counts nothing when they would pass the bound. */
  readonly take: (bytes: number) => boolean;
  readonly give: (bytes: number) => void;
  readonly held: () => number;
  readonly limit: number;
}

export const byteBudget = (limit: number): ByteBudget => {
  let held = 0;
  return {
    take: (bytes) => {
      if (held + bytes > limit) return false;
      held += bytes;
      return true;
    },
    give: (bytes) => {
      held -= bytes;
    },
    held: () => held,
    limit,
  };
};

const shared = new WeakSet<Buffer>();

/**
 * Marks a Buffer that lives for the process (a cached file, such as the docs page's scripts) and is sent as is to
 * every client that asks: the bytes a connection has not sent of it cost the process nothing beyond the one copy, so
 * the unsent-bytes bound counts them once, however many connections hold them.
 */
export const sharedBody = (bytes: Buffer): Buffer => {
  shared.add(bytes);
  return bytes;
};

type End = ServerResponse['end'];

/** A ServerResponse class for one server: its responses note a shared body and carry the server's body budget. */
export const responseClass = (bodyBudget: ByteBudget): typeof ServerResponse => {
  class Response<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {}
  const end = ServerResponse.prototype.end as (this: ServerResponse, ...args: unknown[]) => ServerResponse;
  Object.defineProperty(Response.prototype, 'bodyBudget', { value: bodyBudget });
  Response.prototype.end = function (this: BoundedResponse, chunk?: unknown, encoding?: unknown, cb?: unknown) {
    if (chunk instanceof Buffer && shared.has(chunk)) this.sharedBody = chunk;
    return end.call(this, chunk, encoding, cb);
  } as End;
  return Response;
};
