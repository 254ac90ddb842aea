import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { UnsentBound } from './unsent.js';

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

/** What the server of a connection shares with the code that answers on it. */
export interface SocketEdge {
  /** The request-body bytes all connections may hold at once (MAX_BODY_BYTES), which body.ts takes from. */
  readonly bodies: ByteBudget;
  /** The response bytes all connections may hold unsent (MAX_UNSENT_BYTES). */
  readonly unsent: UnsentBound;
  /** Closes the connection after the response without a reset, while the client may still be sending. */
  readonly closeAfter: (res: ServerResponse) => void;
}
export const edges = new WeakMap<Socket, SocketEdge>();
