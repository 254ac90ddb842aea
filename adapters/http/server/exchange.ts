import { ServerResponse, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';

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

/** The request-body budget of the server each connection belongs to (set once per connection by server.ts). */
const budgets = new WeakMap<Socket, ByteBudget>();
export const setBodyBudget = (socket: Socket, budget: ByteBudget): void => void budgets.set(socket, budget);
/** The budget a request's body is counted against; undefined outside createHttpServer (no total bound). */
export const bodyBudgetOf = (req: IncomingMessage): ByteBudget | undefined => budgets.get(req.socket);

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

/** A response of a server from createHttpServer: it notes the shared Buffer it was ended with, if any. */
export interface SharingResponse extends ServerResponse {
  sharedBody?: Buffer;
}

type End = ServerResponse['end'];
// eslint-disable-next-line @typescript-eslint/unbound-method -- always called through `end.call(this, ...)` below
const end = ServerResponse.prototype.end as (this: ServerResponse, ...args: unknown[]) => ServerResponse;

/**
 * node:http's `ServerResponse` option: the server's responses are of this class, whose `end` notes a shared body
 * (one WeakSet look-up, for Buffer bodies only), so that the unsent-bytes bound can count it once.
 */
export class SharingServerResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  sharedBody?: Buffer;
}
SharingServerResponse.prototype.end = function (
  this: SharingResponse,
  chunk?: unknown,
  encoding?: unknown,
  cb?: unknown,
) {
  if (chunk instanceof Buffer && shared.has(chunk)) this.sharedBody = chunk;
  return end.call(this, chunk, encoding, cb);
} as End;
