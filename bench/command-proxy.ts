import { createServer, connect, type Server, type Socket } from 'node:net';
import { BSON, type Document } from 'mongodb';

/**
 * A TCP proxy on free loopback ports in front of a MongoDB-wire server (FerretDB) that counts the commands its clients
 * send, for benches that measure processes they cannot monitor from inside (bench/scale-http.ts). Each entrance is a
 * port of its own with a label (`service`, `bare`), so that two kinds of client on one server are counted apart.
 *
 * It reads the client's side of the MongoDB wire protocol: messages are framed by their length (the first int32 of a
 * 16-byte header); an OP_MSG (opcode 2013) carries its command as the document of its section of kind 0, whose first
 * key is the command's name (`insert`, `find`); a connection's first message (`hello`, or a legacy OP_QUERY
 * `isMaster`) names the client's `appName`, so commands are also counted by the pool that sent them. The server's
 * replies are only framed, to know which commands are still unanswered (`quiet`). The handshake and the driver's
 * monitoring (`hello`, `isMaster`) are counted apart from the commands, under `monitoring`.
 */

const OP_MSG = 2013;
const OP_QUERY = 2004;
const MONITORING = new Set(['hello', 'isMaster', 'ismaster']);

export interface CommandCounts {
  /** Commands, monitoring excluded. */
  commands: number;
  /** `insert` commands into the collection `plants`. */
  plantInserts: number;
  /** Documents those commands carried (the service sends the creates of one turn in one command). */
  plantDocuments: number;
  finds: number;
  /** `find` commands on `plants` (an id lookup, a load of an owner's slots, a look): each a scan of it on FerretDB. */
  plantFinds: number;
  /** Handshakes and heartbeats (`hello`, `isMaster`). */
  monitoring: number;
  byName: Record<string, number>;
  /** Commands by the sending client's appName (`-` when it gave none), then by name. */
  byApp: Record<string, Record<string, number>>;
  /** Answered commands by name: milliseconds from the command to its reply, in all and at most. */
  answeredMs: Record<string, { n: number; total: number; max: number }>;
}

/** Nothing counted yet. */
export const noCounts = (): CommandCounts => ({
  commands: 0,
  plantInserts: 0,
  plantDocuments: 0,
  finds: 0,
  plantFinds: 0,
  monitoring: 0,
  byName: {},
  byApp: {},
  answeredMs: {},
});

/** Adds `b` into `a`. */
export const addCounts = (a: CommandCounts, b: CommandCounts): void => {
  a.commands += b.commands;
  a.plantInserts += b.plantInserts;
  a.plantDocuments += b.plantDocuments;
  a.finds += b.finds;
  a.plantFinds += b.plantFinds;
  a.monitoring += b.monitoring;
  for (const [name, n] of Object.entries(b.byName)) a.byName[name] = (a.byName[name] ?? 0) + n;
  for (const [app, names] of Object.entries(b.byApp)) {
    const into = (a.byApp[app] ??= {});
    for (const [name, n] of Object.entries(names)) into[name] = (into[name] ?? 0) + n;
  }
  for (const [name, t] of Object.entries(b.answeredMs)) {
    const into = (a.answeredMs[name] ??= { n: 0, total: 0, max: 0 });
    into.n += t.n;
    into.total += t.total;
    into.max = Math.max(into.max, t.max);
  }
};

export interface Entrance {
  readonly label: string;
  readonly port: number;
  /** A mongodb:// URI through this entrance. */
  readonly uri: string;
  /** What was counted since the last `reset`. */
  readonly counts: () => CommandCounts;
  /** Returns what was counted and starts again from zero. */
  readonly reset: () => CommandCounts;
  /** Commands sent through this entrance and not answered yet (monitoring excluded). */
  readonly unanswered: () => number;
  /** Resolves once no command has been unanswered, nor any sent, for `ms` (a client's background work is done). */
  readonly quiet: (ms: number, timeoutMs?: number) => Promise<void>;
}

export interface CommandProxy {
  readonly entrance: (label: string) => Promise<Entrance>;
  readonly close: () => Promise<void>;
}

/** The command document of a client's message (OP_MSG section 0, or OP_QUERY's query), or undefined. */
const commandOf = (message: Buffer): Document | undefined => {
  const opCode = message.readInt32LE(12);
  if (opCode === OP_MSG) {
    // flagBits, then sections: the command is the one of kind 0 (a kind-1 section holds documents, such as inserts').
    let at = 20;
    const end = message.length - (message.readUInt32LE(16) & 1 ? 4 : 0);
    while (at < end) {
      const kind = message[at];
      const size = message.readInt32LE(at + 1);
      if (kind === 0) return BSON.deserialize(message.subarray(at + 1, at + 1 + size), { promoteValues: true });
      at += 1 + size;
    }
    return undefined;
  }
  if (opCode === OP_QUERY) {
    // flags, fullCollectionName (a C string), numberToSkip, numberToReturn, then the query.
    const nameEnd = message.indexOf(0, 20);
    const at = nameEnd + 1 + 8;
    return BSON.deserialize(message.subarray(at, at + message.readInt32LE(at)));
  }
  return undefined;
};

/** Documents an insert carries: its `documents` array, or the documents of its OP_MSG sections of kind 1. */
const documentsOf = (message: Buffer, command: Document): number => {
  if (Array.isArray(command['documents'])) return command['documents'].length;
  if (message.readInt32LE(12) !== OP_MSG) return 0;
  let n = 0;
  let at = 20;
  const end = message.length - (message.readUInt32LE(16) & 1 ? 4 : 0);
  while (at < end) {
    const kind = message[at];
    const size = message.readInt32LE(at + 1);
    if (kind === 1) {
      // size, the sequence's name (a C string), then documents back to back, each prefixed by its int32 size.
      let doc = message.indexOf(0, at + 5) + 1;
      while (doc < at + 1 + size) {
        n++;
        doc += message.readInt32LE(doc);
      }
    }
    at += 1 + size;
  }
  return n;
};

/** Splits a stream into wire-protocol messages (each prefixed by its int32 length). */
const framer = (onMessage: (message: Buffer) => void) => {
  let pending: Buffer = Buffer.alloc(0);
  return (chunk: Buffer) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    while (pending.length >= 4) {
      const length = pending.readInt32LE(0);
      if (pending.length < length) break;
      onMessage(pending.subarray(0, length));
      pending = pending.subarray(length);
    }
  };
};

export const startCommandProxy = async (targetPort: number, targetHost = '127.0.0.1'): Promise<CommandProxy> => {
  const servers: Server[] = [];
  const sockets = new Set<Socket>();

  const entrance = async (label: string): Promise<Entrance> => {
    let counts = noCounts();
    /** Commands sent and not answered yet: their name and when they were sent. */
    const unanswered = new Map<string, { readonly name: string; readonly at: number }>();
    let lastActivity = performance.now();
    let nextConnection = 0;
    const server = createServer((client: Socket) => {
      const connection = nextConnection++;
      const upstream = connect({ port: targetPort, host: targetHost, noDelay: true });
      client.setNoDelay(true);
      sockets.add(client).add(upstream);
      let app = '-';
      const key = (requestId: number) => `${connection}:${requestId}`;
      const readUp = framer((message) => {
        const command = commandOf(message);
        const name = command === undefined ? `opcode ${message.readInt32LE(12)}` : (Object.keys(command)[0] ?? '');
        if (MONITORING.has(name)) {
          const announced = (command?.['client'] as { application?: { name?: unknown } } | undefined)?.application;
          if (typeof announced?.name === 'string') app = announced.name;
          counts.monitoring++;
          return;
        }
        lastActivity = performance.now();
        counts.commands++;
        counts.byName[name] = (counts.byName[name] ?? 0) + 1;
        const byName = (counts.byApp[app] ??= {});
        byName[name] = (byName[name] ?? 0) + 1;
        if (name === 'insert' && command?.['insert'] === 'plants') {
          counts.plantInserts++;
          counts.plantDocuments += documentsOf(message, command);
        }
        if (name === 'find') counts.finds++;
        // Finds on `plants` apart from the bookkeeping's (bounds, sweeps, locks), in count and in time answered.
        const plantFind = name === 'find' && command?.['find'] === 'plants';
        if (plantFind) counts.plantFinds++;
        // moreToCome (bit 1): no reply will come.
        if (!(message.readInt32LE(12) === OP_MSG && message.readUInt32LE(16) & 2))
          unanswered.set(key(message.readInt32LE(4)), {
            name: plantFind ? 'find plants' : name,
            at: performance.now(),
          });
      });
      const readDown = framer((message) => {
        const k = key(message.readInt32LE(8));
        const sent = unanswered.get(k);
        if (sent === undefined) return;
        unanswered.delete(k);
        lastActivity = performance.now();
        const took = lastActivity - sent.at;
        const t = (counts.answeredMs[sent.name] ??= { n: 0, total: 0, max: 0 });
        t.n++;
        t.total += took;
        t.max = Math.max(t.max, took);
      });
      client.on('data', (chunk: Buffer) => {
        upstream.write(chunk);
        readUp(chunk);
      });
      upstream.on('data', (chunk: Buffer) => {
        client.write(chunk);
        readDown(chunk);
      });
      const close = () => {
        client.destroy();
        upstream.destroy();
        sockets.delete(client);
        sockets.delete(upstream);
        // A command cut with its connection is answered by nothing: it no longer counts as in flight.
        for (const k of [...unanswered.keys()]) if (k.startsWith(`${connection}:`)) unanswered.delete(k);
      };
      client.on('close', close);
      upstream.on('close', close);
      client.on('error', close);
      upstream.on('error', close);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push(server);
    const address = server.address();
    if (typeof address !== 'object' || address === null) throw new Error('the proxy has no port');
    return {
      label,
      port: address.port,
      uri: `mongodb://127.0.0.1:${address.port}/`,
      counts: () => counts,
      reset: () => {
        const was = counts;
        counts = noCounts();
        return was;
      },
      unanswered: () => unanswered.size,
      quiet: async (ms, timeoutMs = 180_000) => {
        const until = performance.now() + timeoutMs;
        while (unanswered.size > 0 || performance.now() - lastActivity < ms) {
          if (performance.now() > until) throw new Error(`${label}: commands still running after ${timeoutMs} ms`);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      },
    };
  };

  return {
    entrance,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    },
  };
};
