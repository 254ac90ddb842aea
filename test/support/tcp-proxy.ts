import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy on a free loopback port in front of a real server (FerretDB, Redis), for fault tests: it passes bytes
 * through, or holds them (a slow or partitioned network: nothing is lost, it is delivered late and in order when
 * released), or cuts connections, or refuses new ones. Holding can start on a predicate over the bytes a client sends
 * (for example, the first chunk that carries a `delete` command), so a test can delay exactly one operation.
 */

/**
 * Whether a chunk a MongoDB client sends carries the command `name`: the command document's first key, a string key
 * (BSON type 2). For `holdUpstream` and for reading what a client sent.
 */
export const carries = (name: string) => {
  const marker = Buffer.from(`\u0002${name}\u0000`, 'latin1');
  return (chunk: Buffer): boolean => chunk.includes(marker);
};

export type Direction = 'up' | 'down' | 'both';

/** One client connection and its upstream twin. `up` is client to server, `down` server to client. */
export interface Link {
  readonly id: number;
  /** Everything the client sent so far (latin1, first 256 KiB), to recognise a connection by what it said. */
  readonly sent: () => string;
  /** Queues this connection's bytes in `direction` from now on, until released. */
  readonly hold: (direction?: Direction) => void;
  /** Delivers what was held, in order, and passes again (a client that closed meanwhile closes after the delivery). */
  readonly release: () => void;
  /** Destroys both sides at once; whatever was held is dropped. */
  readonly cut: () => void;
  readonly closed: () => boolean;
  /** Whether bytes are held on this connection now. */
  readonly held: () => boolean;
  /**
   * Whether the client has closed its side while bytes it sent are held (a client that gave up waiting, as the MongoDB
   * driver does at its socket timeout): released, they reach the server with the end, and the server closes in turn.
   */
  readonly abandoned: () => boolean;
  /** Resolves once both sides are closed (for a released connection whose client had gone: once the server has read
   * everything delivered to it and closed in turn). */
  readonly whenClosed: () => Promise<void>;
}

export interface TcpProxy {
  readonly port: number;
  /** Live connections, oldest first. */
  readonly links: () => readonly Link[];
  /**
   * Holds every connection's upstream bytes from the first chunk for which `when` is true (every chunk when absent),
   * that chunk included. Connections opened later are held the same way while this is in force.
   */
  readonly holdUpstream: (when?: (chunk: Buffer) => boolean) => void;
  /**
   * Resolves with the first connection whose bytes `holdUpstream` (the one in force) started holding, at once if one
   * already is: the held command is on the wire. Never resolves when nothing is held (wrap it in `within`).
   */
  readonly firstHeld: () => Promise<Link>;
  /** Stops holding new traffic and delivers everything held, on every connection. */
  readonly releaseAll: () => void;
  /** Destroys every live connection. */
  readonly cutAll: () => void;
  /** While on, new connections are closed at once (as a server that is down would refuse them). */
  readonly refuse: (on: boolean) => void;
  readonly close: () => Promise<void>;
}

const SENT_MAX = 256 * 1024;

export const startTcpProxy = async (targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> => {
  const links = new Set<Link>();
  let nextId = 1;
  let holdWhen: ((chunk: Buffer) => boolean) | undefined;
  let refusing = false;
  // The first connection held under the current holdUpstream, and who waits for one.
  let firstHeld: Link | undefined;
  const heldWaiters: Array<(link: Link) => void> = [];
  const startHolding = (when: ((chunk: Buffer) => boolean) | undefined) => {
    holdWhen = when;
    firstHeld = undefined;
  };

  const server: Server = createServer({ allowHalfOpen: true }, (client: Socket) => {
    if (refusing) {
      client.destroy();
      return;
    }
    const upstream = connect({ port: targetPort, host: targetHost, allowHalfOpen: true, noDelay: true });
    // No Nagle: a small write held back waiting for an ACK (up to 40 ms) would be a delay the test did not ask for.
    client.setNoDelay(true);
    const id = nextId++;
    let sent = '';
    let upHeld = false;
    let downHeld = false;
    const upQueue: Buffer[] = [];
    const downQueue: Buffer[] = [];
    let clientEnded = false;
    let serverEnded = false;
    let gone = false;
    let onGone: () => void = () => undefined;
    const gonePromise = new Promise<void>((resolve) => (onGone = resolve));

    const destroy = () => {
      if (gone) return;
      gone = true;
      client.destroy();
      upstream.destroy();
      links.delete(link);
      onGone();
    };
    const flushUp = () => {
      for (const chunk of upQueue.splice(0)) upstream.write(chunk);
      if (clientEnded) upstream.end();
    };
    const flushDown = () => {
      for (const chunk of downQueue.splice(0)) client.write(chunk);
      if (serverEnded) client.end();
    };

    const link: Link = {
      id,
      sent: () => sent,
      hold: (direction = 'both') => {
        if (direction !== 'down') upHeld = true;
        if (direction !== 'up') downHeld = true;
      },
      release: () => {
        upHeld = false;
        downHeld = false;
        if (!gone) {
          flushUp();
          flushDown();
        }
      },
      cut: destroy,
      closed: () => gone,
      held: () => upHeld || downHeld || upQueue.length > 0 || downQueue.length > 0,
      abandoned: () => !gone && clientEnded && (upHeld || upQueue.length > 0),
      whenClosed: () => gonePromise,
    };
    links.add(link);

    client.on('data', (chunk: Buffer) => {
      if (sent.length < SENT_MAX) sent += chunk.toString('latin1');
      if (!upHeld && holdWhen !== undefined && holdWhen(chunk)) {
        upHeld = true;
        if (firstHeld === undefined) {
          firstHeld = link;
          for (const waiter of heldWaiters.splice(0)) waiter(link);
        }
      }
      if (upHeld) upQueue.push(chunk);
      else upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (downHeld) downQueue.push(chunk);
      else client.write(chunk);
    });
    // A side that finishes sending: pass the end on once whatever was held for the other side has gone through.
    client.on('end', () => {
      clientEnded = true;
      if (!upHeld) upstream.end();
    });
    upstream.on('end', () => {
      serverEnded = true;
      if (!downHeld) client.end();
    });
    // A client that is destroyed (not ended) while bytes are held still gets them delivered on release, as a
    // network would deliver packets already on their way; the server side is then ended.
    client.on('close', () => {
      clientEnded = true;
      if (upHeld) return;
      upstream.end();
      if (serverEnded) destroy();
    });
    upstream.on('close', () => {
      if (!downHeld) destroy();
    });
    client.on('error', () => undefined);
    upstream.on('error', () => destroy());
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('the proxy has no port');

  return {
    port: address.port,
    links: () => [...links],
    holdUpstream: (when) => startHolding(when ?? (() => true)),
    firstHeld: () =>
      firstHeld === undefined ? new Promise<Link>((resolve) => heldWaiters.push(resolve)) : Promise.resolve(firstHeld),
    releaseAll: () => {
      startHolding(undefined);
      for (const link of links) link.release();
    },
    cutAll: () => {
      for (const link of [...links]) link.cut();
    },
    refuse: (on) => {
      refusing = on;
    },
    close: async () => {
      for (const link of [...links]) link.cut();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};
