import { createServer, type Socket } from 'node:net';

export interface HungListener {
  readonly port: number;
  /** Resolves once a client has connected (at once if one already has). */
  readonly connected: () => Promise<void>;
  readonly close: () => Promise<void>;
}

/**
 * A backend that hangs: a TCP listener on loopback that accepts every connection and never answers a byte. Given as
 * MONGODB_URI or REDIS_URL, it is the storage or token store that is up on the network and does not respond.
 */
export const hungListener = async (): Promise<HungListener> => {
  const sockets = new Set<Socket>();
  let arrived: () => void = () => undefined;
  const firstConnection = new Promise<void>((resolve) => {
    arrived = resolve;
  });
  const server = createServer((socket) => {
    arrived();
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return {
    port: address.port,
    connected: () => firstConnection,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
};
