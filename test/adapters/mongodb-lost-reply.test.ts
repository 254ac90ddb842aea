import { randomUUID } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { pino } from 'pino';
import * as assert from 'uvu/assert';
import {
  COLLECTION,
  mongodbPlantRepository,
  type MongodbPlantRepository,
} from '../../adapters/storage/mongodb/mongodb-plant-repository.js';
import { ferretDbBinary, sharedFerretDb, type RunningServer } from '../../harness/servers.js';
import { aPlant, freshOwner, right } from '../support/fixtures.js';
import { suiteWith } from '../support/suites.js';
import { carries, startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { eventually, within } from '../support/wait.js';

/**
 * A create's insert whose reply is lost on the way back (the connection cut after the server stored the plant) is not
 * sent again where the driver does not retry writes (a standalone server, FerretDB): without the retryable write's
 * transaction number the server could not tell a second send from a new insert, and whatever happened to the plant in
 * between (a delete) would be undone. (On a replica set the driver sends it again with that number:
 * mongodb-retryable-writes.test.ts.)
 */
const binary = ferretDbBinary();

interface Subject {
  readonly server: RunningServer;
  readonly proxy: TcpProxy;
  readonly store: MongodbPlantRepository;
  readonly admin: MongoClient;
  readonly db: string;
  readonly teardown: () => Promise<void>;
}

const { test, subject, run } = suiteWith<Subject>(
  'MongoDB adapter: a create whose reply is lost on the way back [FerretDB]',
  'skip' in binary
    ? binary
    : async () => {
        const server = await sharedFerretDb(binary.bin);
        const proxy = await startTcpProxy(server.port);
        const db = `plantstore_resend_${randomUUID().slice(0, 8)}`;
        const store = mongodbPlantRepository({
          uri: `mongodb://127.0.0.1:${proxy.port}/`,
          db,
          timeoutMs: 10_000,
          writeConcern: 'majority',
          journal: true,
          logger: pino({ level: 'silent' }),
        });
        const admin = new MongoClient(server.uri, { serverSelectionTimeoutMS: 5000, useBigInt64: true });
        return {
          server,
          proxy,
          store,
          admin,
          db,
          teardown: async () => {
            proxy.releaseAll();
            await store.close();
            await admin
              .db(db)
              .dropDatabase()
              .catch(() => undefined);
            await admin.close();
            await proxy.close();
          },
        };
      },
);

test('a plant deleted while the reply to its insert was lost is not stored again by its create', async (ctx) => {
  const { proxy, store, admin, db } = subject(ctx);
  const repo = store.repository;
  await right(repo.ping);
  await right(repo.insert(freshOwner('warm-up'), aPlant(1n))); // indexes built, connections open
  const owner = freshOwner('lost-reply');
  const plants = admin.db(db).collection(COLLECTION);

  // The create's insert is held on its way to the server; once it is there, its reply is held on the way back.
  proxy.holdUpstream(carries('insert'));
  const creating = repo.insert(owner, aPlant(7n))();
  const link = await within(5000, 'the create sent its insert', proxy.firstHeld());
  proxy.holdUpstream(() => false); // other traffic passes
  link.release();
  link.hold('down');
  await eventually('the server stored the plant', async () => (await plants.countDocuments({ owner })) === 1);

  // The plant is deleted meanwhile (a client's DELETE of that id: it exists, so it goes), then the reply is lost.
  assert.is(await right(repo.remove(owner, aPlant(7n).id)), true);
  link.cut();
  await creating; // 503 (outcome unknown) or 200: either way, what happened after it was stored stands

  assert.is(await plants.countDocuments({ owner }), 0, 'the deleted plant was stored again by a second send');
});

run();
