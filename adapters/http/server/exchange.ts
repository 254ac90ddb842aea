import { IncomingMessage, type ServerResponse } from 'node:http';
import type * as E from 'fp-ts/lib/Either.js';

/** A count of bytes held across connections: `take` counts them in, or says false when they would pass `limit`. */
export interface ByteBudget {
  readonly take: (bytes: number) => boolean;
  readonly give: (bytes: number) => void;
}

export const byteBudget = (limit: number): ByteBudget => {
  let held = 0;
  return {
    take: (bytes) => {
      if (held + bytes > limit) return false;
      held += bytes;
      return true;
    },
    give: (bytes) => void (held -= bytes),
  };
};

/** Whether an Expect field asks for 100-continue and nothing else (any case, listed once or more); else 417. */
export const expectsContinueOnly = (expect: string | undefined): boolean =>
  expect !== undefined && expect.split(',').every((item) => item.trim().toLowerCase() === '100-continue');

/** The total bound on response bytes unread by clients (unsent.ts). */
export interface UnsentBound {
  /** Counts a response in until it closes; each 'drain' of it is the client reading. */
  readonly hold: (res: ServerResponse, own: number, shared: Buffer | undefined) => void;
  /** Past the bound: no response is produced until it is back within (server.ts waits for room). */
  readonly full: () => boolean;
  /** The response bytes counted in now (bench/unsent-sampler.ts). */
  readonly held: () => number;
}

/** What a server shares with the code that answers on its connections. */
export interface ServerEdge {
  /** The request-body bytes all connections may hold at once (MAX_BODY_BYTES), which body.ts takes from. */
  readonly bodies: ByteBudget;
  /** The response bytes all connections may hold unsent (MAX_UNSENT_BYTES). */
  readonly unsent: UnsentBound;
  /**
   * Ends a refusal sent while its request's body may still arrive: the response is written whole (with
   * `Connection: close`) and ended once the body has arrived, or at the linger bound, so that closing never resets a
   * connection with the client's bytes unread (a reset makes the client's kernel drop the answer it has not read).
   */
  readonly endAfterBody: (res: ServerResponse, body: string) => void;
}

/** What reading a body refuses; the API's failure map (api/failures.ts) answers them. */
export type BodyRefusal =
  | { readonly _tag: 'PayloadTooLarge'; readonly limit: number }
  /** The server holds as many request-body bytes as it may (MAX_BODY_BYTES): this body is not read. */
  | { readonly _tag: 'BodiesBusy' };

/** A body read to its end or refused; undefined when the client went away mid-body. */
export type BodyRead = Promise<E.Either<BodyRefusal, Buffer> | undefined>;

/**
 * node:http's `IncomingMessage` option: each server subclasses it (server.ts) so that its requests reach its edge
 * without a lookup. `early` is the body of a request that waited its turn, read while it waited (body.ts).
 */
export class EdgeRequest extends IncomingMessage {
  /** Set only for a request that waited (no field of its own otherwise: one less to make per request). */
  declare early: BodyRead | undefined;
  get edge(): ServerEdge | undefined {
    return undefined;
  }
}

/** The edge of the server that read `req`, if it is one of ours. */
export const edgeOf = (req: IncomingMessage): ServerEdge | undefined =>
  req instanceof EdgeRequest ? req.edge : undefined;
