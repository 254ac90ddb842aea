import * as assert from 'uvu/assert';
import { startService, type Service } from '../support/http.js';
import { suiteWith } from '../support/suites.js';
import { eventually } from '../support/wait.js';
import { assertContractFailure, exchange, logLineOf, openWire } from './wire.js';

/**
 * Failures found below the app, by Node's HTTP parser, its timeouts or the server's own checks: each answers in the
 * contract's shape (Error body, X-Request-Id, no-store, nosniff, Connection: close) and is logged once.
 */
const { test, subject, run } = suiteWith('edge: failures of the HTTP layer speak the contract', async () => {
  const svc = await startService({}, { headersTimeoutMs: 400, requestTimeoutMs: 800, maxHeaderSize: 8192 });
  return { svc, teardown: svc.close };
});
const it = (title: string, fn: (svc: Service) => Promise<void>) => test(title, (ctx) => fn(subject(ctx).svc));

const expectFailure = async (
  svc: Service,
  request: string,
  status: number,
  code?: RegExp,
  closes: boolean | 'after' = true,
) => {
  const res = await exchange(svc.port, request);
  assertContractFailure(res, status, { closes });
  const line = logLineOf(svc.logs(), res);
  if (code !== undefined) assert.match(String(line['code']), code);
  return res;
};

it('two Content-Length values are 400', async (svc) => {
  const res = await expectFailure(
    svc,
    'POST /plants HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}',
    400,
    /^HPE_/,
  );
  assert.match(res.body, /Content-Length/);
});

it('two Authorization fields are 400, whichever tenants they name', async (svc) => {
  const res = await expectFailure(
    svc,
    `GET /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${svc.token.bob}\r\nAuthorization: Bearer ${svc.token.alice}\r\n\r\n`,
    400,
    /^AUTHORIZATION$/,
  );
  assert.match(res.body, /Authorization/);
});

it('two Content-Type fields are 400, and nothing is created', async (svc) => {
  const res = await expectFailure(
    svc,
    `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${svc.token.alice}\r\nContent-Type: application/json\r\n` +
      'Content-Type: text/plain\r\nContent-Length: 27\r\n\r\n{"id": 404001, "name": "x"}',
    400,
    /^CONTENT_TYPE$/,
  );
  assert.match(res.body, /Content-Type/);
  assert.is((await svc.call('DELETE', '/plants/404001', { token: svc.token.alice })).status, 404);
});

it('Content-Length together with Transfer-Encoding is 400', async (svc) => {
  await expectFailure(
    svc,
    'POST /plants HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    400,
    /^HPE_/,
  );
});

it('a garbage request line is 400', async (svc) => {
  await expectFailure(svc, 'HELLO THERE\r\n\r\n', 400, /^HPE_/);
});

it('an invalid header line is 400', async (svc) => {
  await expectFailure(svc, 'GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n', 400, /^HPE_/);
});

it('headers over MAX_HEADER_SIZE are 431', async (svc) => {
  const res = await expectFailure(
    svc,
    `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: ${'p'.repeat(9000)}\r\n\r\n`,
    431,
    /HPE_HEADER_OVERFLOW/,
  );
  assert.match(res.body, /8192 bytes/);
});

it('a request of more than MAX_HEADER_FIELDS (100) header fields is 431; one of 100 is served', async (svc) => {
  const fields = (n: number) => Array.from({ length: n }, (_, i) => `x-${i}: 1\r\n`).join('');
  const res = await expectFailure(svc, `GET /healthz HTTP/1.1\r\nHost: x\r\n${fields(100)}\r\n`, 431, /HEADER_FIELDS/);
  assert.match(res.body, /at most 100 header fields/);
  assert.is((await exchange(svc.port, `GET /healthz HTTP/1.1\r\nHost: x\r\n${fields(99)}\r\n`)).status, 200);
});

it('an expectation other than 100-continue is 417', async (svc) => {
  await expectFailure(svc, 'GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\n\r\n', 417);
});

it('Expect: 100-continue still gets 100 Continue, then the real answer', async (svc) => {
  const wire = await openWire(svc.port);
  try {
    const body = '{"id": 100, "name": "Continued"}';
    wire.write(
      `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${svc.token.alice}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n`,
    );
    assert.is((await wire.response(1)).status, 100);
    wire.write(body);
    const res = await wire.response(2);
    assert.is(res.status, 200);
    assert.is(res.body, '{"name":"Continued"}');
  } finally {
    wire.destroy();
  }
});

it('Expect: 100-continue sent in two fields still gets 100 Continue, then the real answer', async (svc) => {
  const wire = await openWire(svc.port);
  try {
    const body = '{"id": 101, "name": "Continued twice"}';
    wire.write(
      `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${svc.token.alice}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${body.length}\r\nExpect: 100-continue\r\nExpect: 100-Continue\r\n\r\n`,
    );
    assert.is((await wire.response(1)).status, 100);
    wire.write(body);
    assert.is((await wire.response(2)).status, 200);
  } finally {
    wire.destroy();
  }
});

it('100-continue listed with another expectation is 417 before the body is read', async (svc) => {
  await expectFailure(
    svc,
    `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${svc.token.alice}\r\nContent-Type: application/json\r\n` +
      'Content-Length: 30\r\nExpect: 100-continue, teapot\r\n\r\n',
    417,
  );
});

it('Expect: 100-continue with a bad token is answered 401 without 100 Continue', async (svc) => {
  const wire = await openWire(svc.port);
  try {
    wire.write(
      'POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer not-a-known-token\r\nContent-Type: application/json\r\n' +
        'Content-Length: 30\r\nExpect: 100-continue\r\n\r\n',
    );
    const first = await wire.response(1);
    assert.is(first.status, 401);
  } finally {
    wire.destroy();
  }
});

it('headers that do not arrive within HEADERS_TIMEOUT_MS are 408', async (svc) => {
  const wire = await openWire(svc.port);
  try {
    wire.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
    const res = await wire.response(1, 5000);
    assertContractFailure(res, 408, { closes: 'after' });
    assert.match(String(logLineOf(svc.logs(), res)['code']), /TIMEOUT/);
    await wire.closed();
  } finally {
    wire.destroy();
  }
});

it('a body that does not arrive within REQUEST_TIMEOUT_MS is 408, and its late rest creates nothing', async (svc) => {
  const wire = await openWire(svc.port);
  try {
    const body = '{"id": 4080, "name": "late"}';
    wire.write(
      `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${svc.token.alice}\r\nContent-Type: application/json\r\n` +
        `X-Request-Id: slow-body-1\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
    );
    const res = await wire.response(1, 5000);
    assertContractFailure(res, 408, { closes: 'after' });
    assert.is(res.headers['x-request-id'], 'slow-body-1');
    logLineOf(svc.logs(), res);
    wire.write(body.slice(10));
    await wire.closed();
    // Once the client ends its side too, the server reads what it sent (the late rest, then the end) and lets the
    // connection go: whatever the late rest could cause has happened by then.
    const port = wire.socket.localPort as number;
    wire.socket.end();
    await eventually('the server lets go of the connection', () => !svc.holds(port));
    const listed = await svc.call('GET', '/plants', { token: svc.token.alice });
    assert.not.match(listed.text, /late/);
  } finally {
    wire.destroy();
  }
});

it('a chunked body with bad framing is 400, with the caller request id', async (svc) => {
  const res = await expectFailure(
    svc,
    `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${svc.token.alice}\r\nContent-Type: application/json\r\n` +
      'X-Request-Id: bad-chunk-1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"id"\r\nzz\r\n',
    400,
    /^HPE_/,
    'after',
  );
  assert.is(res.headers['x-request-id'], 'bad-chunk-1');
});

it('a transfer coding other than chunked (gzip, chunked) is 400, and its body creates nothing', async (svc) => {
  const body = '{"id": 4150, "name": "coded"}';
  const res = await expectFailure(
    svc,
    `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${svc.token.alice}\r\nContent-Type: application/json\r\n` +
      `Transfer-Encoding: gzip, chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`,
    400,
    /^TRANSFER_ENCODING$/,
  );
  assert.match(res.body, /chunked/);
  const listed = await svc.call('GET', '/plants', { token: svc.token.alice });
  assert.not.match(listed.text, /coded/);
});

it('CONNECT is 501: this is not a proxy', async (svc) => {
  const res = await expectFailure(svc, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', 501);
  assert.match(res.body, /CONNECT/);
});

it('an HTTP/1.1 request without Host, or with two, is 400', async (svc) => {
  await expectFailure(svc, 'GET /healthz HTTP/1.1\r\n\r\n', 400, /HOST/);
  await expectFailure(svc, 'GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n', 400, /HOST/);
});

it('an HTTP version other than 1.x is 505', async (svc) => {
  await expectFailure(svc, 'GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n', 505);
});

it('an error found in a later pipelined request is answered after the earlier ones', async (svc) => {
  const wire = await openWire(svc.port);
  try {
    wire.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n');
    assert.is((await wire.response(1)).status, 200);
    assertContractFailure(await wire.response(2), 400);
    await wire.closed();
  } finally {
    wire.destroy();
  }
});

it('an Upgrade request is served as plain HTTP/1.1', async (svc) => {
  const res = await exchange(
    svc.port,
    'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n',
  );
  assert.is(res.status, 200);
  assert.is(res.body, '{"status":"ok"}');
});

it('after a failure the connection is closed and nothing more is answered on it', async (svc) => {
  const wire = await openWire(svc.port);
  try {
    wire.write('GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    // Closed: the server's end of stream has come, so every byte it sent has been read.
    await wire.closed();
    assert.equal(
      wire.responses().map((r) => r.status),
      [417],
    );
  } finally {
    wire.destroy();
  }
});

run();
