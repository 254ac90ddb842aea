import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient, type CommandStartedEvent } from 'mongodb';
import { pino } from 'pino';
import * as assert from 'uvu/assert';
import { COLLECTION, mongodbPlantRepository } from '../../adapters/storage/mongodb/mongodb-plant-repository.js';
import { accepts, ferretDbBinary, freePort } from '../../harness/servers.js';
import { aPlant, freshOwner, right } from '../support/fixtures.js';
import { suiteWith } from '../support/suites.js';
import { carries, startTcpProxy } from '../support/tcp-proxy.js';
import { eventually, within } from '../support/wait.js';

/**
 * CONTRACT.md §10: "creates and deletes are retryable writes for the MongoDB driver". The driver makes a write
 * retryable on a replica set by giving its command a transaction number (`txnNumber`, beside the session's `lsid`):
 * sent again after a failover, the server recognizes a write it already applied. FerretDB started with
 * `--repl-set-name` answers `hello` as the primary of a replica set, so the driver treats it as one and shows, in the
 * commands it sends, which writes it makes retryable (FerretDB itself ignores the number).
 */
const binary = ferretDbBinary();

interface Subject {
  readonly uri: string;
  readonly port: number;
  readonly teardown: () => Promise<void>;
}

const { test, subject, run } = suiteWith<Subject>(
  'MongoDB adapter on a replica set: creates are retryable writes [FerretDB --repl-set-name]',
  'skip' in binary
    ? binary
    : async () => {
        const dir = mkdtempSync(join(tmpdir(), 'ferretdb-rs-'));
        const port = await freePort();
        const child: ChildProcess = spawn(
          binary.bin,
          [
            '--handler=sqlite',
            `--sqlite-url=file:${dir}/`,
            `--listen-addr=127.0.0.1:${port}`,
            `--state-dir=${dir}`,
            '--telemetry=disable',
            '--debug-addr=-',
            '--log-level=warn',
            '--repl-set-name=rs0',
          ],
          { env: { ...process.env, DO_NOT_TRACK: '1', FERRETDB_TELEMETRY: 'disable' }, stdio: 'ignore' },
        );
        const exited = new Promise((resolve) => child.once('exit', resolve));
        const stop = async () => {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
          await exited;
          rmSync(dir, { recursive: true, force: true });
        };
        await eventually('FerretDB accepts connections', () => accepts(port)).catch(async (e: unknown) => {
          await stop();
          throw e;
        });
        return {
          uri: `mongodb://127.0.0.1:${port}/?replicaSet=rs0`,
          port,
          teardown: stop,
        };
      },
);

/** The adapter on that server, its commands monitored. */
const storeAt = (uri: string, db: string) =>
  mongodbPlantRepository({
    uri,
    db,
    timeoutMs: 10_000,
    writeConcern: 'majority',
    journal: true,
    logger: pino({ level: 'silent' }),
    monitorCommands: true,
  });

test('a create sends its insert as a retryable write (with a transaction number), bound or none', async (ctx) => {
  const { uri } = subject(ctx);
  const db = `plantstore_rs_${randomUUID().slice(0, 8)}`;
  const store = storeAt(uri, db);
  const admin = new MongoClient(uri, { serverSelectionTimeoutMS: 5000 });
  const inserts: CommandStartedEvent[] = [];
  store.client.on('commandStarted', (e) => {
    if (e.commandName === 'insert' && e.command['insert'] === COLLECTION) inserts.push(e);
  });
  try {
    await right(store.repository.ping);
    assert.is((await right(store.repository.insert(freshOwner('bound'), aPlant(1n), 100)))._tag, 'Inserted');
    assert.is((await right(store.repository.insert(freshOwner('none'), aPlant(1n))))._tag, 'Inserted');
    assert.ok(inserts.length >= 2, 'the creates sent their inserts');
    assert.equal(
      inserts.map((e) => 'txnNumber' in e.command),
      inserts.map(() => true),
      'every insert of a create carries a transaction number',
    );
  } finally {
    await store.close();
    await admin.db(db).dropDatabase();
    await admin.close();
  }
});

test('a create whose insert was cut on its way (a network error the driver labels retryable) is sent again and stored once', async (ctx) => {
  const { port } = subject(ctx);
  const proxy = await startTcpProxy(port);
  // Through the proxy: a direct connection, so that the driver keeps to it rather than to the host `hello` names.
  const uri = `mongodb://127.0.0.1:${proxy.port}/?directConnection=true`;
  const db = `plantstore_rs_${randomUUID().slice(0, 8)}`;
  const store = storeAt(uri, db);
  const admin = new MongoClient(uri, { serverSelectionTimeoutMS: 5000 });
  const owner = freshOwner('cut');
  try {
    await right(store.repository.ping);
    await right(store.repository.insert(freshOwner('warm-up'), aPlant(1n)));
    proxy.holdUpstream(carries('insert'));
    const creating = right(store.repository.insert(owner, aPlant(7n)));
    const link = await within(5000, 'the create sent its insert', proxy.firstHeld());
    proxy.holdUpstream(() => false);
    link.cut(); // the insert never reached the server
    assert.is((await creating)._tag, 'Inserted');
    assert.is(await admin.db(db).collection(COLLECTION).countDocuments({ owner }), 1);
  } finally {
    proxy.releaseAll();
    await store.close();
    await admin.db(db).dropDatabase();
    await admin.close();
    await proxy.close();
  }
});

run();
