import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CommandStartedEvent, Document } from 'mongodb';
import { pino } from 'pino';
import * as assert from 'uvu/assert';
import { NO_PLANT_LIMIT } from '../../application/ports/plant-repository.js';
import {
  mongodbPlantRepository,
  type MongodbPlantRepository,
} from '../../adapters/storage/mongodb/mongodb-plant-repository.js';
import { accepts, ferretDbBinary, freePort } from '../../harness/servers.js';
import { aPlant, freshOwner, left, right } from '../support/fixtures.js';
import { suiteWith } from '../support/suites.js';
import { carries, startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { eventually, sleep } from '../support/wait.js';

/**
 * What the adapter sends, as the driver puts it on the wire (its command monitoring), to a FerretDB that answers as the
 * primary of a replica set (`--repl-set-name`), so that the driver retries writes and sends read concerns as it does to
 * a MongoDB replica set; reached through a TCP proxy that can hold chosen commands.
 * - every command of a create, a delete, a move and a page names the owner (a cluster sharded on `{owner: 1}` sends each
 *   to one shard);
 * - the read behind an "already stored" 200 asks for majority-committed data, and FerretDB serves it;
 * - no command leaves after its request's deadline, the driver's own retries included;
 * - a look at an owner's slots held past its request's deadline is kept for the retry.
 */
const binary = ferretDbBinary();

interface Subject {
  readonly proxy: TcpProxy;
  readonly uri: string;
  readonly teardown: () => Promise<void>;
}

const { test, subject, run } = suiteWith<Subject>(
  'MongoDB adapter on the wire: owner, read concern, deadline [FerretDB --repl-set-name]',
  'skip' in binary
    ? binary
    : async () => {
        const dir = mkdtempSync(join(tmpdir(), 'ferretdb-wire-'));
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
        const proxy = await startTcpProxy(port);
        return {
          proxy,
          // Direct: the driver stays on the proxy rather than on the member address the server's hello names.
          uri: `mongodb://127.0.0.1:${proxy.port}/?directConnection=true`,
          teardown: async () => {
            await proxy.close();
            await stop();
          },
        };
      },
);

/** The upkeep's commands (index checks and builds), the collection's and not an owner's: left out here. */
const upkeep = (e: CommandStartedEvent): boolean =>
  ['listIndexes', 'createIndexes', 'ping'].includes(e.commandName) ||
  (e.commandName === 'aggregate' && '$indexStats' in ((e.command.pipeline as Document[])[0] ?? {}));

/** An adapter on its own database whose commands, when they started (performance.now()), are recorded. */
const recorded = (uri: string, timeoutMs: number) => {
  const store: MongodbPlantRepository = mongodbPlantRepository({
    uri,
    db: `plantstore_wire_${randomUUID().slice(0, 8)}`,
    timeoutMs,
    writeConcern: 'majority',
    journal: true,
    logger: pino({ level: 'silent' }),
    indexRecheckMs: 3_600_000,
    monitorCommands: true,
  });
  const sent: Array<{ readonly at: number; readonly event: CommandStartedEvent }> = [];
  store.client.on('commandStarted', (event) => {
    if (!upkeep(event)) sent.push({ at: performance.now(), event });
  });
  return { store, sent };
};

/** The owners a command's filters or documents name (each must be exactly one, the request's). */
const ownersNamed = ({ commandName, command }: CommandStartedEvent): unknown[] => {
  switch (commandName) {
    case 'insert':
      return (command.documents as Document[]).map((d): unknown => d.owner);
    case 'find':
      return [(command.filter as Document).owner];
    case 'aggregate':
      return [((command.pipeline as Document[])[0]?.$match as Document | undefined)?.owner];
    case 'delete':
      return (command.deletes as Document[]).map((d): unknown => (d.q as Document).owner);
    case 'update':
      return (command.updates as Document[]).map((d): unknown => (d.q as Document).owner);
    default:
      return [`a ${commandName} command`];
  }
};

test('every command of a create, a move, an identical retry, a page and a delete names the owner', async (ctx) => {
  const { uri } = subject(ctx);
  const { store, sent } = recorded(uri, 10_000);
  try {
    const repo = store.repository;
    await right(repo.ping);
    const owner = freshOwner('named');
    await right(repo.insert(owner, aPlant(1n), NO_PLANT_LIMIT)); // outside the bound that follows
    await right(repo.insert(owner, aPlant(2n), 5)); // moves plant 1 in, then stores plant 2
    await right(repo.insert(owner, aPlant(2n), 5)); // identical retry: the id looked up
    await right(repo.page(owner, undefined, 10));
    assert.ok(await right(repo.remove(owner, aPlant(1n).id)));
    const names = new Set(sent.map((s) => s.event.commandName));
    for (const name of ['insert', 'find', 'update', 'delete']) assert.ok(names.has(name), `a ${name} was sent`);
    for (const { event } of sent) assert.equal(ownersNamed(event), [owner], `${event.commandName} names the owner`);
  } finally {
    await store.close();
  }
});

test('the read behind an "already stored" 200 asks for majority-committed data, and FerretDB serves it', async (ctx) => {
  const { uri } = subject(ctx);
  const { store, sent } = recorded(uri, 10_000);
  try {
    const owner = freshOwner('majority');
    await right(store.repository.insert(owner, aPlant(7n), 100));
    sent.length = 0;
    const again = await right(store.repository.insert(owner, aPlant(7n), 100));
    assert.is(again._tag, 'Exists');
    const lookups = sent.filter(
      ({ event }) => event.commandName === 'find' && 'id' in (event.command.filter as Document),
    );
    assert.ok(lookups.length > 0, 'the id was looked up');
    for (const { event } of lookups) assert.is((event.command.readConcern as Document | undefined)?.level, 'majority');
  } finally {
    await store.close();
  }
});

/**
 * A request whose command `held` is held by the network past the request's deadline: the request answers 503, and
 * nothing is sent after that answer, for three deadlines more (the driver's socket timeout, equal to the deadline, then
 * fails the held command, which the driver retries by itself unless it knows the request is over).
 */
const nothingAfterTheDeadline = async (proxy: TcpProxy, uri: string, held: string) => {
  const timeoutMs = 1000;
  const { store, sent } = recorded(uri, timeoutMs);
  try {
    const repo = store.repository;
    const owner = freshOwner('deadline');
    await right(repo.insert(owner, aPlant(1n), 100)); // connected, indexes built, the owner held
    proxy.holdUpstream(carries(held));
    const before = sent.length;
    await (held === 'insert' ? left(repo.insert(owner, aPlant(2n), 100)) : left(repo.remove(owner, aPlant(1n).id)));
    const answeredAt = performance.now();
    assert.ok(
      sent.slice(before).some(({ event }) => event.commandName === held),
      `the ${held} left before the deadline`,
    );
    await sleep(3 * timeoutMs);
    const late = sent.filter(({ at }) => at > answeredAt).map(({ event }) => event.commandName);
    assert.equal(late, [], 'no command after the deadline');
  } finally {
    proxy.releaseAll();
    await store.close();
  }
};

test('no command after its request deadline: a read held past it is not sent again by the driver', async (ctx) => {
  const { proxy, uri } = subject(ctx);
  await nothingAfterTheDeadline(proxy, uri, 'find');
});

test('no command after its request deadline: a write held past it is not sent again by the driver', async (ctx) => {
  const { proxy, uri } = subject(ctx);
  await nothingAfterTheDeadline(proxy, uri, 'insert');
});

test('a look held past its request deadline is answered and kept: the retry after the 503 sends one insert', async (ctx) => {
  const { proxy, uri } = subject(ctx);
  const { store, sent } = recorded(uri, 1000);
  try {
    const repo = store.repository;
    await right(repo.insert(freshOwner('warm'), aPlant(1n), 100)); // connected, indexes built
    const owner = freshOwner('slow-look');
    proxy.holdUpstream(carries('find')); // the glance at the owner's highest slot, as a slow store would take it
    await left(repo.insert(owner, aPlant(1n), 100));
    const answeredAt = performance.now();
    proxy.releaseAll();
    assert.equal(await right(repo.insert(owner, aPlant(1n), 100)), { _tag: 'Inserted', count: 1 });
    const after = sent.filter(({ at }) => at > answeredAt).map(({ event }) => event.commandName);
    assert.equal(after, ['insert'], 'the retry found the look its predecessor began');
  } finally {
    proxy.releaseAll();
    await store.close();
  }
});

run();
