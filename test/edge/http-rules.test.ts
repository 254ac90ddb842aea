import * as assert from 'uvu/assert';
import { startService, type Service } from '../support/http.js';
import { suiteWith } from '../support/suites.js';
import { assertContractFailure, exchange, logLineOf, openWire } from './wire.js';

/**
 * RFC rules the parser leaves to the server: an HTTP/1.0 message is not read as HTTP/1.1 (no Transfer-Encoding, no
 * 100 Continue), and a Host field must be a host (RFC 9112 §3.2, RFC 9110 §7.2). Each refusal answers in the Error
 * shape and is logged.
 */
const { test, subject, run } = suiteWith('edge: HTTP/1.0 and Host rules', async () => {
  const svc = await startService();
  return { svc, teardown: svc.close };
});
const it = (title: string, fn: (svc: Service) => Promise<void>) => test(title, (ctx) => fn(subject(ctx).svc));

const post = (svc: Service, version: string, fields: string) =>
  `POST /plants HTTP/${version}\r\nHost: x\r\nAuthorization: Bearer ${svc.token.alice}\r\n` +
  `Content-Type: application/json\r\n${fields}\r\n`;

it('HTTP/1.0 with Transfer-Encoding: chunked and keep-alive is 400, logged, and its connection closes', async (svc) => {
  const body = '{"id":10,"name":"chunked"}';
  const wire = await openWire(svc.port);
  try {
    wire.write(
      post(svc, '1.0', 'Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n') +
        `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`,
    );
    const res = await wire.response(1);
    assertContractFailure(res, 400);
    assert.match(res.body, /HTTP\/1\.0/);
    assert.is(logLineOf(svc.logs(), res)['code'], 'TRANSFER_ENCODING');
    await wire.closed();
    assert.is(wire.responses().length, 1);
  } finally {
    wire.destroy();
  }
  // Nothing was created.
  assert.is((await svc.call('DELETE', '/plants/10', { token: svc.token.alice })).status, 404);
});

it('HTTP/1.0 with Expect: 100-continue gets no 100 Continue: its first response is the answer', async (svc) => {
  const body = '{"id":11,"name":"no interim"}';
  const wire = await openWire(svc.port);
  try {
    wire.write(post(svc, '1.0', `Content-Length: ${body.length}\r\nExpect: 100-continue\r\n`) + body);
    const res = await wire.response(1);
    assert.is(res.status, 200, `the first response (an HTTP/1.0 client takes a 100 for the answer): ${res.status}`);
    assert.is(res.body, '{"name":"no interim"}');
    await wire.closed();
    assert.is(wire.responses().length, 1);
  } finally {
    wire.destroy();
  }
});

for (const host of ['a, b', 'a b', 'u@x', 'x/y', 'x:abc', '[::1', 'x:1:2', 'x%zz', 'x?y']) {
  it(`Host: ${JSON.stringify(host)} is 400, logged`, async (svc) => {
    for (const version of ['1.1', '1.0']) {
      const res = await exchange(svc.port, `GET /healthz HTTP/${version}\r\nHost: ${host}\r\n\r\n`);
      assertContractFailure(res, 400);
      assert.match(res.body, /Host/);
      assert.is(logLineOf(svc.logs(), res)['code'], 'HOST');
    }
  });
}

it('valid Host values are served: names, addresses, ports, an empty value', async (svc) => {
  for (const host of [
    'x',
    'example.com:8080',
    '127.0.0.1:3000',
    '[::1]',
    '[::1]:443',
    'xn--bcher-kva.example',
    'a,b',
    '',
  ]) {
    const res = await exchange(svc.port, `GET /healthz HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
    assert.is(res.status, 200, `Host: ${JSON.stringify(host)}`);
  }
});

it('an absolute-form target whose authority is no host and port is 400', async (svc) => {
  for (const target of ['http://x:abc/healthz', 'http://[::1/healthz', 'http://a%zz/healthz']) {
    const res = await exchange(svc.port, `GET ${target} HTTP/1.1\r\nHost: x\r\n\r\n`);
    assertContractFailure(res, 400);
    assert.is(logLineOf(svc.logs(), res)['code'], 'REQUEST_TARGET');
  }
});

run();
