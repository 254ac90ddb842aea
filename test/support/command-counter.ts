import { createServer, connect, type Socket } from 'node:net';
import { BSON } from 'mongodb';

/**
 * A TCP proxy on a free loopback port in front of a MongoDB-wire server that counts the commands its clients send and
 * the bytes of the replies to them, for tests that measure service processes they cannot monitor from inside.
 *
 * Messages are framed by their length (the first int32 of a 16-byte header); a client's OP_MSG (opcode 2013) carries
 * its command as the document of its section of kind 0, whose first key is the command's name. The driver's handshakes
 * and heartbeats (`hello`, `isMaster`, and any legacy OP_QUERY) are passed through uncounted, and so are their replies
 * (matched by `responseTo`).
 */

const OP_MSG = 2013;
const MONITORING = new Set(['hello', 'isMaster', 'ismaster']);

export interface CommandCounts {
  /** Commands sent, monitoring excluded, by name. */
  readonly byName: Record<string, number>;
  /** Bytes of the replies to those commands (whole messages, headers included). */
  replyBytes: number;
}

export interface CommandCounter {
  readonly uri: string;
  /** Returns what was counted since the last reset, and starts again from zero. */
  readonly reset: () => CommandCounts;
  /** Resolves once no counted command has been unanswered, nor any sent, for `ms`. */
  readonly quiet: (ms: number) => Promise<void>;
  readonly close: () => Promise<void>;
}

/** The name of the command an OP_MSG carries (undefined for anything else). */
const commandName = (message: Buffer): string | undefined => {
  if (message.readInt32LE(12) !== OP_MSG) return undefined;
  let at = 20;
  while (at < message.length) {
    const kind = message[at];
    const size = message.readInt32LE(at + 1);
    if (kind === 0) return Object.keys(BSON.deserialize(message.subarray(at + 1, at + 1 + size)))[0];
    at += 1 + size;
  }
  return undefined;
};

/** Splits a stream into wire-protocol messages. */
const framer = (onMessage: (message: Buffer) => void) => {
  let pending: Buffer = Buffer.alloc(0);
  return (chunk: Buffer) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    while (pending.length >= 4 && pending.length >= pending.readInt32LE(0)) {
      const length = pending.readInt32LE(0);
      onMessage(pending.subarray(0, length));
      pending = pending.subarray(length);
    }
  };
};

export const startCommandCounter = async (targetPort: number): Promise<CommandCounter> => {
  let counts: CommandCounts = { byName: {}, replyBytes: 0 };
  let lastActivity = performance.now();
  const unanswered = new Set<string>();
  const sockets = new Set<Socket>();
  let nextConnection = 0;
  const server = createServer((client) => {
    const connection = nextConnection++;
    const upstream = connect({ port: targetPort, host: '127.0.0.1', noDelay: true });
    client.setNoDelay(true);
    sockets.add(client).add(upstream);
    const readUp = framer((message) => {
      const name = commandName(message);
      if (name === undefined || MONITORING.has(name)) return;
      lastActivity = performance.now();
      counts.byName[name] = (counts.byName[name] ?? 0) + 1;
      if ((message.readUInt32LE(16) & 2) === 0) unanswered.add(`${connection}:${message.readInt32LE(4)}`); // moreToCome: no reply
    });
    const readDown = framer((message) => {
      const key = `${connection}:${message.readInt32LE(8)}`;
      if (!unanswered.delete(key)) return;
      lastActivity = performance.now();
      counts.replyBytes += message.length;
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
      for (const key of [...unanswered]) if (key.startsWith(`${connection}:`)) unanswered.delete(key);
    };
    for (const side of [client, upstream]) {
      side.on('close', close);
      side.on('error', close);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('the counter has no port');
  return {
    uri: `mongodb://127.0.0.1:${address.port}/`,
    reset: () => {
      const was = counts;
      counts = { byName: {}, replyBytes: 0 };
      return was;
    },
    quiet: async (ms) => {
      const until = performance.now() + 120_000;
      while (unanswered.size > 0 || performance.now() - lastActivity < ms) {
        if (performance.now() > until) throw new Error('commands still unanswered after 120 s');
        await new Promise((resolve) => setTimeout(resolve, 50)); // polls the counter's own state
      }
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};
