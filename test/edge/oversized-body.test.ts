import { once } from 'node:events';
import * as assert from 'uvu/assert';
import { runNode } from '../support/process.js';
import { suiteWith } from '../support/suites.js';
import { assertContractFailure, openWire, type WireResponse } from './wire.js';

/**
 * A body over the limit is answered 413 at once, and the connection closes gracefully: the client still writing its
 * body must read the 413 every time, not a reset that discards it. The service runs as its own process, as in
 * production: in the test's process, client and server would share one event loop and hide the race.
 */
interface Service {
  readonly port: number;
  readonly token: string;
}
const TOKEN = 'oversized-body-token';
const {
  test: suiteTest,
  subject,
  run,
} = suiteWith('edge: an oversized body always gets its 413', async () => {
  const proc = runNode('bootstrap/main.js', {
    PORT: '0',
    HOST: '127.0.0.1',
    AUTH_TOKENS: JSON.stringify([{ token: TOKEN, owner: 'o', subject: 's', scopes: ['plants:read', 'plants:write'] }]),
  });
  const port = Number((await proc.waitFor(/"port":(\d+)/))[1]);
  return {
    port,
    token: TOKEN,
    teardown: async () => {
      proc.child.kill('SIGKILL');
      await proc.exited;
    },
  };
});
const test = (title: string, fn: (ctx: { svc: Service }) => Promise<void>) =>
  suiteTest(title, (ctx) => fn({ svc: subject(ctx) }));

const ATTEMPTS = 20;
const head = (svc: Service, framing: string) =>
  `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${svc.token}\r\nContent-Type: application/json\r\n${framing}\r\n`;

/**
 * Sends `head`, then writes `chunk` as fast as the connection takes it, up to `total` bytes, while reading; stops at
 * the first complete response. Resolves with it, or undefined when the connection ended without one.
 */
const streamUntilAnswered = async (svc: Service, start: string, chunk: Buffer, total: number) => {
  const wire = await openWire(svc.port);
  try {
    wire.write(start);
    let answer: WireResponse | undefined;
    const answered = wire.response(1, 5000).then(
      (res) => (answer = res),
      () => undefined,
    );
    const closed = once(wire.socket, 'close').catch(() => undefined);
    for (let sent = 0; answer === undefined && !wire.isClosed() && sent < total; sent += chunk.length) {
      // Full: wait until the connection takes more, or the answer comes, or the connection goes.
      if (!wire.write(chunk)) await Promise.race([once(wire.socket, 'drain').catch(() => undefined), answered, closed]);
    }
    await answered;
    return answer;
  } finally {
    wire.destroy();
  }
};

const tally = (answers: ReadonlyArray<WireResponse | undefined>) =>
  answers.map((a) => (a === undefined ? 'none' : String(a.status))).join(',');

test(`a streamed chunked body over the limit gets its 413, ${ATTEMPTS} times of ${ATTEMPTS}`, async ({ svc }) => {
  const piece = Buffer.alloc(16 * 1024, 0x20);
  const chunk = Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]);
  const answers: Array<WireResponse | undefined> = [];
  for (let i = 0; i < ATTEMPTS; i++) {
    answers.push(await streamUntilAnswered(svc, head(svc, 'Transfer-Encoding: chunked\r\n'), chunk, 8 << 20));
  }
  assert.is(tally(answers), Array(ATTEMPTS).fill('413').join(','));
  for (const a of answers) assertContractFailure(a as WireResponse, 413, { closes: 'after' });
});

test(`a streamed body with a large Content-Length gets its 413, ${ATTEMPTS} times of ${ATTEMPTS}`, async ({ svc }) => {
  const total = 8 << 20;
  const chunk = Buffer.alloc(16 * 1024, 0x20);
  const answers: Array<WireResponse | undefined> = [];
  for (let i = 0; i < ATTEMPTS; i++) {
    answers.push(await streamUntilAnswered(svc, head(svc, `Content-Length: ${total}\r\n`), chunk, total));
  }
  assert.is(tally(answers), Array(ATTEMPTS).fill('413').join(','));
});

test(`a client that sends a whole oversized body before reading still reads its 413`, async ({ svc }) => {
  const body = Buffer.alloc(256 * 1024, 0x20);
  const answers: Array<WireResponse | undefined> = [];
  for (let i = 0; i < ATTEMPTS; i++) {
    const wire = await openWire(svc.port);
    try {
      wire.write(head(svc, `Content-Length: ${body.length}\r\n`));
      wire.write(body);
      answers.push(await wire.response(1, 5000).catch(() => undefined));
    } finally {
      wire.destroy();
    }
  }
  assert.is(tally(answers), Array(ATTEMPTS).fill('413').join(','));
});

test('after the 413 the server closes the connection by itself', async ({ svc }) => {
  const wire = await openWire(svc.port);
  try {
    wire.write(head(svc, 'Content-Length: 100000\r\n'));
    wire.write(Buffer.alloc(20000, 0x20));
    assertContractFailure(await wire.response(1), 413, { closes: 'after' });
    await wire.closed(5000);
  } finally {
    wire.destroy();
  }
});

run();
