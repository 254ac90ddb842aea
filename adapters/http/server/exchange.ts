import { ServerResponse, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { UnsentBound } from './unsent.js';

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

/**
 * Whether an Expect field asks for 100-continue and nothing else: `100-continue` in any letter case, also listed more
 * than once (two Expect fields, which Node joins with ", "). Node hands every request whose Expect holds the word
 * `100-continue` anywhere to 'checkContinue'; server.ts answers the others 417, and body.ts invites the body only when
 * this holds, so that no request is left waiting for a 100 Continue that never comes.
 */
export const expectsContinueOnly = (expect: string | undefined): boolean =>
  expect !== undefined && expect.split(',').every((item) => item.trim().toLowerCase() === '100-continue');

/** What the server of a connection shares with the code that answers on it (set once per connection by server.ts). */
export interface SocketEdge {
  /** The request-body bytes all connections may hold at once (MAX_BODY_BYTES), which body.ts takes from. */
  readonly bodies: ByteBudget;
  /** The response bytes all connections may hold unsent (MAX_UNSENT_BYTES). */
  readonly unsent: UnsentBound;
  /** Closes the connection after the response without a reset, while the client may still be sending (server.ts). */
  readonly closeAfter: (res: ServerResponse) => void;
}
const edges = new WeakMap<Socket, SocketEdge>();
export const setSocketEdge = (socket: Socket, edge: SocketEdge): void => void edges.set(socket, edge);
/** The edge of a request's connection; undefined outside createHttpServer (no bounds). */
export const edgeOf = (socket: Socket | null): SocketEdge | undefined =>
  socket === null ? undefined : edges.get(socket);
/** The budget a request's body is counted against; undefined outside createHttpServer (no total bound). */
export const bodyBudgetOf = (req: IncomingMessage): ByteBudget | undefined => edges.get(req.socket)?.bodies;

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

/**
 * A body larger than this is handed to the socket a slice at a time, the next once the last is taken ('drain'): so
 * that the socket holds at most a slice or two of it, and each 'drain' shows the client reading (unsent.ts).
 */
const SLICE = 64 * 1024;

type End = ServerResponse['end'];
// eslint-disable-next-line @typescript-eslint/unbound-method -- always called through `end.call(this, ...)` below
const end = ServerResponse.prototype.end as (this: ServerResponse, ...args: unknown[]) => ServerResponse;

/**
 * node:http's `ServerResponse` option: the server's responses are of this class, whose `end` counts what the socket
 * is left holding against the unsent-bytes bound, and sends a large body a slice at a time.
 */
export class EdgeResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {}
EdgeResponse.prototype.end = function (this: ServerResponse, chunk?: unknown, encoding?: unknown, cb?: unknown) {
  const socket = this.socket;
  const unsent = edgeOf(socket)?.unsent;
  let body: Buffer | undefined;
  if (chunk instanceof Buffer) body = chunk;
  else if (typeof chunk === 'string' && chunk.length > SLICE / 3 && encoding === undefined) {
    body = Buffer.from(chunk);
  }
  if (socket === null || unsent === undefined || body === undefined || this.req.method === 'HEAD') {
    return end.call(this, chunk, encoding, cb);
  }
  const common = shared.has(body) ? body : undefined;
  if (body.length <= SLICE) {
    end.call(this, body, cb);
    if (!this.writableFinished && socket.writableLength > 0) {
      unsent.hold(this, common === undefined ? socket.writableLength : 0, common);
    }
    return this;
  }
  const all = body;
  let at = 0;
  const held = unsent.hold(this, common === undefined ? all.length : 0, common);
  const pump = (): void => {
    held.moved();
    while (at < all.length) {
      const next = all.subarray(at, at + SLICE);
      at += next.length;
      if (at >= all.length) {
        this.off('drain', pump);
        end.call(this, next, cb);
        return;
      }
      if (!this.write(next)) return;
    }
  };
  this.on('drain', pump);
  pump();
  return this;
} as End;
