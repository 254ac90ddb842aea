import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { HttpMetrics } from '../../adapters/http/metrics-listener.js';
import { rawRequest, startService } from '../support/http.js';

/**
 * The `method` label of the request metrics is bounded by what the service serves, not by what a client sends: Node's
 * parser knows over thirty methods, and each on each route would add a histogram's series to every scrape.
 */
const test = suite('request metrics: a client cannot add series by its choice of method');

test('methods no route serves are labelled other; the served ones keep their name', async () => {
  const seen: string[] = [];
  const metrics: HttpMetrics = {
    observe: (method) => void seen.push(method),
    refused: (method) => void seen.push(String(method)),
  };
  const svc = await startService({ metrics });
  try {
    const send = (line: string) => rawRequest(svc.port, [`${line} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`]);
    for (const method of ['PROPFIND', 'PURGE', 'PUT', 'MKCALENDAR', 'M-SEARCH']) {
      assert.is((await send(`${method} /plants`)).status, 405, method);
      assert.is((await send(`${method} /no/such/path`)).status, 404, method);
    }
    assert.is((await send('CONNECT example.com:443')).status, 501);
    // (a HEAD answer has a Content-Length and no body, which rawRequest takes for a cut response)
    for (const method of ['GET', 'HEAD', 'POST', 'DELETE', 'OPTIONS']) await send(`${method} /healthz`).catch(() => 0);
    assert.equal([...new Set(seen)].sort(), ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'POST', 'other']);
  } finally {
    await svc.close();
  }
});

test.run();
