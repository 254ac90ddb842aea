import type { IncomingMessage, ServerResponse } from 'node:http';
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

/**
 * Whether an Expect field asks for 100-continue and nothing else (any letter case, also listed more than once). Node
 * hands every request with `100-continue` anywhere in it to 'checkContinue'; server.ts answers the others 417.
 */
export const expectsContinueOnly = (expect: string | undefined): boolean =>
  expect !== undefined && expect.split(',').every((item) => item.trim().toLowerCase() === '100-continue');

/** What the server of a connection shares with the code that answers on it (set once per connection by server.ts). */
export interface SocketEdge {
  /** The request-body bytes all connections may hold at once (MAX_BODY_BYTES), which body.ts takes from. */
  readonly bodies: ByteBudget;
  /** The response bytes all connections may hold unsent (MAX_UNSENT_BYTES). */
  readonly unsent: UnsentBound;
  /** Closes the connection after the response without a reset, while the client may still be sending. */
  readonly closeAfter: (res: ServerResponse) => void;
}
const edges = new WeakMap<Socket, SocketEdge>();
export const setSocketEdge = (socket: Socket, edge: SocketEdge): void => void edges.set(socket, edge);
/** The edge of a connection; undefined outside createHttpServer (no bounds). */
export const edgeOf = (socket: Socket | null): SocketEdge | undefined =>
  socket === null ? undefined : edges.get(socket);
/** The budget a request's body is counted against; undefined outside createHttpServer. */
export const bodyBudgetOf = (req: IncomingMessage): ByteBudget | undefined => edges.get(req.socket)?.bodies;
