import { createServer as createHttpServer, type Server } from 'node:http';
import { createConnection, createServer, type AddressInfo, type Socket } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { PlantStore, PlantStoreError, type Plant } from '../../client/src/index.js';
import { startService } from '../support/http.js';

/**
 * The client where the service gives no answer, or not the contract's: a dead port, a hung server, a connection
 * dropped before the service saw the request, a caller's abort, and answers of something that is not the service.
 * Each failure is a PlantStoreError with its kind and the cause kept.
 */
const test = suite('TypeScript client without an answer, or without the contract’s');

const listen = async <S extends Server | ReturnType<typeof createServer>>(server: S) => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => closing(server) };
};
const closing = (server: Server | ReturnType<typeof createServer>) =>
  new Promise<void>((resolve) => {
    if ('closeAllConnections' in server) server.closeAllConnections();
    server.close(() => resolve());
  });

/**
 * A server that accepts connections and never answers: how many requests it has been sent (connections do not tell:
 * fetch may open a spare one after an abort).
 */
const hung = async () => {
  const sockets: Socket[] = [];
  let requests = 0;
  const server = createServer((socket) => {
    sockets.push(socket);
    socket.once('data', () => requests++);
  });
  const at = await listen(server);
  return {
    ...at,
    requests: () => requests,
    close: async () => {
      for (const s of sockets) s.destroy();
      await at.close();
    },
  };
};

/** An HTTP server answering every request with `answer`, counting them. */
const answering = async (answer: (res: import('node:http').ServerResponse, n: number) => void) => {
  let requests = 0;
  const at = await listen(createHttpServer((_req, res) => answer(res, ++requests)));
  return { ...at, requests: () => requests };
};

const rejection = async (call: Promise<unknown>): Promise<PlantStoreError> => {
  try {
    await call;
  } catch (e) {
    if (e instanceof PlantStoreError) return e;
    throw e;
  }
  throw new Error('the call resolved; a PlantStoreError was expected');
};

test('network: a port nobody listens on, the cause kept, the request id sent kept', async () => {
  const gone = await listen(createServer());
  await gone.close();
  const failed = await rejection(
    new PlantStore({ baseUrl: gone.base, token: 't' }).create({ id: 1n, name: 'a' }, { requestId: 'dead-1' }),
  );
  assert.equal([failed.kind, failed.status, failed.requestId], ['network', 0, 'dead-1']);
  assert.instance(failed.cause, Error);
  assert.match(failed.message, /^no answer: /);
  assert.is(String(failed), `PlantStoreError [network, no answer, request id dead-1]: ${failed.message}`);
});

test('network: a connection dropped before the service saw it is retried, and the create stored once', async () => {
  const svc = await startService();
  let connections = 0;
  // In front of the service: the first connection is closed at once; every later one is carried through.
  const proxy = createServer((socket) => {
    if (++connections === 1) return void socket.destroy();
    const upstream = createConnection(svc.port, '127.0.0.1');
    socket.pipe(upstream).pipe(socket);
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
  });
  const at = await listen(proxy);
  try {
    const client = new PlantStore({ baseUrl: at.base, token: svc.token.alice, retries: 1 });
    assert.equal(await client.create({ id: 1n, name: 'a' }), { name: 'a' });
    assert.ok(connections >= 2, 'the retry came on a new connection');
    assert.is(svc.logs().filter((l) => l['route'] === 'POST /plants').length, 1, 'the service saw one request');
  } finally {
    await at.close();
    await svc.close();
  }
});

test('timeout: a hung service, each attempt bounded by timeoutMs, retried within the budget', async () => {
  const server = await hung();
  try {
    const client = new PlantStore({ baseUrl: server.base, token: 't', timeoutMs: 200, retries: 1 });
    const failed = await rejection(client.page());
    assert.equal([failed.kind, failed.status], ['timeout', 0]);
    assert.is(failed.message, 'no answer within 200 ms (timeoutMs)');
    assert.ok(failed.cause !== undefined, 'the cause kept');
    assert.is(server.requests(), 2, 'one retry');
  } finally {
    await server.close();
  }
});

test('timeout: an answer whose body stalls is bounded too', async () => {
  const server = await answering((res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('[');
  });
  try {
    const failed = await rejection(new PlantStore({ baseUrl: server.base, token: 't', timeoutMs: 200 }).page());
    assert.is(failed.kind, 'timeout');
  } finally {
    await server.close();
  }
});

test('timeout: by default an attempt is bounded at 10 s', async () => {
  const server = await hung();
  try {
    const started = performance.now();
    const failed = await rejection(new PlantStore({ baseUrl: server.base, token: 't' }).page());
    assert.equal([failed.kind, failed.message], ['timeout', 'no answer within 10000 ms (timeoutMs)']);
    assert.ok(performance.now() - started >= 9_900, 'not before its time');
    assert.is(server.requests(), 1, 'no retry by default');
  } finally {
    await server.close();
  }
});

test('aborted: the caller’s signal ends an attempt in flight, with its reason, and is not retried', async () => {
  const server = await hung();
  try {
    const controller = new AbortController();
    const reason = new Error('the caller gave up');
    const call = new PlantStore({ baseUrl: server.base, token: 't', retries: 3 }).page(
      {},
      { signal: controller.signal },
    );
    setTimeout(() => controller.abort(reason), 100);
    const failed = await rejection(call);
    assert.equal([failed.kind, failed.status, failed.cause], ['aborted', 0, reason]);
    assert.ok(server.requests() <= 1, 'no retry sent');
  } finally {
    await server.close();
  }
});

test('aborted: the caller’s signal ends the wait before a retry, and nothing more is sent', async () => {
  const server = await answering((res) => {
    res.writeHead(503, { 'retry-after': '1' });
    res.end();
  });
  try {
    const controller = new AbortController();
    const reason = new Error('the caller gave up');
    const call = new PlantStore({ baseUrl: server.base, token: 't', retries: 3 }).page(
      {},
      { signal: controller.signal },
    );
    setTimeout(() => controller.abort(reason), 200); // within the 1 s the 503 asks to wait
    const failed = await rejection(call);
    assert.equal([failed.kind, failed.cause], ['aborted', reason]);
    assert.is(server.requests(), 1);
  } finally {
    await server.close();
  }
});

test('a proxy’s 503 without the Error body: unavailable, a message saying so, Retry-After as an HTTP date', async () => {
  const server = await answering((res) => {
    res.writeHead(503, { 'content-type': 'text/html', 'retry-after': new Date(Date.now() + 5000).toUTCString() });
    res.end('<html><body>Service Unavailable</body></html>');
  });
  try {
    const failed = await rejection(new PlantStore({ baseUrl: server.base, token: 't' }).page());
    assert.equal([failed.kind, failed.status], ['unavailable', 503]);
    assert.is(failed.message, "HTTP 503 without the service's Error body (a proxy's answer, or not this service)");
    assert.is(failed.requestId, undefined);
    assert.ok(
      failed.retryAfter !== undefined && failed.retryAfter >= 3 && failed.retryAfter <= 6,
      `${failed.retryAfter}`,
    );
  } finally {
    await server.close();
  }
});

test('unexpected: a success body that is not the contract’s, and another status', async () => {
  const server = await answering((res, n) => {
    res.writeHead(n === 1 ? 200 : 418, { 'content-type': 'application/json' });
    res.end(n === 1 ? '[{"name": 7}]' : '{}');
  });
  try {
    const client = new PlantStore({ baseUrl: server.base, token: 't' });
    const malformed = await rejection(client.page());
    assert.equal([malformed.kind, malformed.status], ['unexpected', 200]);
    assert.is(malformed.message, "unexpected response: a plant's name is not a string");
    assert.is((await rejection(client.page())).kind, 'unexpected');
  } finally {
    await server.close();
  }
});

test('invalid: a message not of the form `field: rule` (a 405’s, a proxy’s 400) names no field', async () => {
  const server = await answering((res, n) => {
    res.writeHead(n === 1 ? 405 : 400, { 'content-type': n === 1 ? 'application/json' : 'text/html' });
    res.end(n === 1 ? '{"error":405,"message":"method not allowed here; use GET"}' : '<h1>Bad Request</h1>');
  });
  try {
    const client = new PlantStore({ baseUrl: server.base, token: 't' });
    const [method, proxy] = [await rejection(client.page()), await rejection(client.page())];
    assert.equal([method.kind, method.status, method.field], ['invalid', 405, undefined]);
    assert.equal([proxy.kind, proxy.status, proxy.field], ['invalid', 400, undefined]);
  } finally {
    await server.close();
  }
});

test('unexpected: a next link repeating a cursor already read rejects instead of looping', async () => {
  const server = await answering((res) => {
    res.writeHead(200, { 'content-type': 'application/json', link: '</plants?limit=1&cursor=again>; rel="next"' });
    res.end('[{"name": "p"}]');
  });
  try {
    const seen: Plant[] = [];
    const failed = await rejection(
      (async () => {
        for await (const plant of new PlantStore({ baseUrl: server.base, token: 't' }).list({ limit: 1 }))
          seen.push(plant);
      })(),
    );
    assert.equal(
      [failed.kind, failed.message],
      ['unexpected', 'unexpected response: the next link repeats the cursor again'],
    );
    assert.is(seen.length, 2, 'the first page and the page at "again", then the repeat is refused');
  } finally {
    await server.close();
  }
});

test('invalid: options and arguments refused before sending', async () => {
  const refusal = (make: () => unknown) => {
    try {
      make();
    } catch (e) {
      assert.instance(e, PlantStoreError);
      return [(e as PlantStoreError).kind, (e as PlantStoreError).status, (e as PlantStoreError).field];
    }
    throw new Error('nothing thrown');
  };
  const base = 'http://127.0.0.1:9';
  assert.equal(
    refusal(() => new PlantStore({ baseUrl: 'not a url', token: 't' })),
    ['invalid', 0, 'baseUrl'],
  );
  assert.equal(
    refusal(() => new PlantStore({ baseUrl: base, token: 't', retries: -1 })),
    ['invalid', 0, 'retries'],
  );
  assert.equal(
    refusal(() => new PlantStore({ baseUrl: base, token: 't', timeoutMs: 0 })),
    ['invalid', 0, 'timeoutMs'],
  );
  const client = new PlantStore({ baseUrl: base, token: 't' });
  const numberId = await rejection(client.delete(7 as unknown as bigint));
  assert.equal(
    [numberId.kind, numberId.field, numberId.message],
    ['invalid', 'id', 'id: must be a bigint (got number)'],
  );
});

test.run();
