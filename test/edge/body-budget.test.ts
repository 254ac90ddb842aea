import { connect, type Socket } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { countedBytes } from '../../adapters/http/server/body.js';
import { startService, type Service } from '../support/http.js';
import { rssOf, runNode } from '../support/process.js';
import { eventually } from '../support/wait.js';
import { assertContractFailure, logLineOf, openWire, type Wire } from './wire.js';

/**
 * The request-body bytes held in memory are bounded in total (MAX_BODY_BYTES), not only per request (BODY_LIMIT): a
 * body that would pass the total is refused with 503 before it is read further, and what a body held is given back
 * once it has been read. Each body counts for what it makes the process hold (`countedBytes`), so that the bound holds
 * as RSS.
 */
const test = suite('edge: request bodies being read are bounded in total');

const MiB = 1024 * 1024;

/** A plant whose JSON is exactly `size` bytes. */
const plantOf = (id: number, size: number): string => {
  const bare = `{"id":${id},"name":"big","pad":""}`;
  return `{"id":${id},"name":"big","pad":"${'x'.repeat(size - bare.length)}"}`;
};

const head = (svc: Service, framing: string) =>
  `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${svc.token.alice}\r\nContent-Type: application/json\r\n${framing}\r\n`;

/** Sends a head asking for 100-continue and waits for it: the server has counted the body's bytes in. */
const admitted = async (svc: Service, body: string): Promise<Wire> => {
  const wire = await openWire(svc.port);
  wire.write(head(svc, `Content-Length: ${body.length}\r\nExpect: 100-continue\r\n`));
  assert.is((await wire.response(1)).status, 100);
  return wire;
};

test('past MAX_BODY_BYTES held by bodies being read, another body is 503 with Retry-After before it is read, and it is logged', async () => {
  const svc = await startService({ bodyLimit: MiB }, { maxBodyBytes: 2 * countedBytes(MiB) });
  const wires: Wire[] = [];
  try {
    const bodies = [plantOf(1, MiB), plantOf(2, MiB)];
    for (const body of bodies) {
      const wire = await admitted(svc, body);
      wires.push(wire);
      wire.write(body.slice(0, MiB / 2)); // half of it, and then nothing for now
    }
    // A third declared body: refused at once, never invited (no 100 Continue).
    const third = await openWire(svc.port);
    wires.push(third);
    third.write(head(svc, `Content-Length: 100\r\nExpect: 100-continue\r\n`));
    const refused = await third.response(1);
    assertContractFailure(refused, 503, { closes: 'after' });
    assert.ok(Number(refused.headers['retry-after']) >= 1, 'retry-after');
    assert.is(logLineOf(svc.logs(), refused)['route'], 'POST /plants');
    await third.closed();
    // A chunked one too, at its first chunk.
    const chunked = await openWire(svc.port);
    wires.push(chunked);
    chunked.write(head(svc, 'Transfer-Encoding: chunked\r\n') + '40\r\n' + plantOf(3, 64) + '\r\n');
    assertContractFailure(await chunked.response(1), 503, { closes: 'after' });

    // The first body completes: created, and its bytes are given back, so a body fits again.
    const first = wires[0] as Wire;
    first.write((bodies[0] as string).slice(MiB / 2));
    assert.is((await first.response(2)).status, 200);
    const again = await admitted(svc, plantOf(4, MiB));
    wires.push(again);
    again.write(plantOf(4, MiB));
    assert.is((await again.response(2)).status, 200);
  } finally {
    for (const wire of wires) wire.destroy();
    await svc.close();
  }
});

test('a chunked body is counted as it arrives: past the total, 503 before more of it is read', async () => {
  const svc = await startService({ bodyLimit: MiB }, { maxBodyBytes: MiB + MiB / 2 });
  const wires: Wire[] = [];
  try {
    const wire = await admitted(svc, plantOf(1, MiB));
    wires.push(wire);
    wire.write(plantOf(1, MiB).slice(0, 1000));
    const chunked = await openWire(svc.port);
    wires.push(chunked);
    const body = plantOf(2, MiB);
    chunked.write(head(svc, 'Transfer-Encoding: chunked\r\n'));
    // Its first 256 KiB fit beside the 1 MiB declared; its next 512 KiB do not.
    chunked.write(`40000\r\n${body.slice(0, 256 * 1024)}\r\n`);
    chunked.write(`80000\r\n${body.slice(256 * 1024, 768 * 1024)}\r\n`);
    assertContractFailure(await chunked.response(1), 503, { closes: 'after' });
  } finally {
    for (const wire of wires) wire.destroy();
    await svc.close();
  }
});

test('with a 16 MiB BODY_LIMIT, of 12 bodies sent but for their last byte MAX_BODY_BYTES (64 MiB) holds 3, refuses 9, and RSS grows less than 64 MiB', async () => {
  const TOKEN = 'body-budget-token';
  const proc = runNode('bootstrap/main.js', {
    PORT: '0',
    HOST: '127.0.0.1',
    BODY_LIMIT: String(16 * MiB),
    AUTH_TOKENS: JSON.stringify([{ token: TOKEN, owner: 'o', subject: 's', scopes: ['plants:write'] }]),
  });
  const sockets: Socket[] = [];
  try {
    const port = Number((await proc.waitFor(/"port":(\d+)/))[1]);
    const pid = proc.child.pid as number;
    const before = rssOf(pid);
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 20).unref();
    const body = Buffer.from(plantOf(1, 16 * MiB));
    const answers: string[] = [];
    for (let i = 0; i < 12; i++) {
      const socket = connect(port, '127.0.0.1');
      sockets.push(socket);
      let answer = '';
      socket.on('error', () => undefined);
      // A 503 is read, so that the server's side can close.
      socket.on('data', (chunk: Buffer) => {
        if (answer === '') answers.push((answer = chunk.toString('latin1').split('\r\n')[0] ?? ''));
      });
      socket.on('connect', () => {
        socket.write(
          `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\n` +
            `Content-Length: ${body.length}\r\n\r\n`,
        );
        socket.write(body.subarray(0, body.length - 1));
      });
    }
    // Each body's declared length is taken from the total before it is read: 3 fit in 64 MiB, the other 9 are told to
    // retry at once, and the 3 held wait for their last byte (no answer).
    await eventually('9 bodies refused', () => answers.length >= 9, { timeoutMs: 60_000 });
    assert.equal(
      answers,
      Array.from({ length: 9 }, () => 'HTTP/1.1 503 Service Unavailable'),
    );
    // The 3 held bodies have all but their last byte in.
    await eventually('3 bodies held', () => rssOf(pid) - before > 3 * 15 * MiB, { timeoutMs: 60_000 });
    await new Promise((resolve) => setTimeout(resolve, 500));
    clearInterval(sampler);
    assert.ok(peak - before < 64 * MiB, `RSS grew ${((peak - before) / MiB).toFixed(1)} MiB`);
    assert.is((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200);
    assert.is(answers.length, 9, 'the 3 bodies held are still being read');
  } finally {
    for (const socket of sockets) socket.destroy();
    proc.child.kill('SIGKILL');
    await proc.exited;
  }
});

test.run();
