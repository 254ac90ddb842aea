import * as assert from 'uvu/assert';
import { downRepository } from '../support/fakes.js';
import { httpSuite, type Service, serviceSuite } from '../support/http.js';
import { storageBackends } from '../support/storage-backends.js';

const create = async (svc: Service, id: string, who: 'alice' | 'bob' = 'alice') =>
  assert.is(
    (await svc.call('POST', '/plants', { token: svc.token[who], body: `{"id": ${id}, "name": "p"}` })).status,
    200,
  );
const del = (svc: Service, id: string, who: 'alice' | 'bob' | 'aliceWriter' = 'aliceWriter') =>
  svc.call('DELETE', `/plants/${id}`, { token: svc.token[who] });

for (const backend of storageBackends()) {
  const { test, run } = httpSuite('HTTP DELETE /plants/{id}', backend);

  test('deletes with 204 and no body; a second delete is 404', async ({ svc }) => {
    await create(svc, '42');
    const res = await del(svc, '42');
    assert.is(res.status, 204);
    assert.is(res.text, '');
    assert.is(res.headers.get('content-type'), null);
    assert.is((await del(svc, '42')).status, 404);
    assert.is((await del(svc, '43')).status, 404, 'never existed');
  });

  test('another owner’s plant is 404, exactly like a missing one, and stays', async ({ svc }) => {
    await create(svc, '77', 'bob');
    const theirs = await del(svc, '77');
    const missing = await del(svc, '78');
    assert.is(theirs.status, 404);
    assert.is(theirs.text, missing.text);
    assert.equal((await svc.call('GET', '/plants', { token: svc.token.bob })).json(), [{ name: 'p' }]);
  });

  test('path ids match exactly beyond 2^53 and at both ends of the range', async ({ svc }) => {
    for (const id of ['9007199254740993', '-9223372036854775808', '9223372036854775807']) await create(svc, id);
    assert.is((await del(svc, '9007199254740992')).status, 404);
    for (const id of ['9007199254740993', '-9223372036854775808', '9223372036854775807'])
      assert.is((await del(svc, id)).status, 204, id);
  });

  test('leading zeros and "-0" are the same decimal integer', async ({ svc }) => {
    await create(svc, '8');
    assert.is((await del(svc, '0008')).status, 204);
    await create(svc, '0');
    assert.is((await del(svc, '-0')).status, 204);
  });

  test('an id that is not a decimal int64 is 400 naming id', async ({ svc }) => {
    for (const id of [
      'abc',
      '1.5',
      '+1',
      '0x10',
      '1e3',
      '9223372036854775808',
      '-9223372036854775809',
      '12345678901234567890',
      '%20',
      '-',
      '1%2F2',
    ]) {
      const res = await del(svc, id);
      assert.is(res.status, 400, id);
      assert.match((res.json() as { message: string }).message, /^id: /);
    }
    const empty = await del(svc, '');
    assert.is(empty.status, 400, 'an empty id');
  });

  test('a percent-encoded id is decoded first', async ({ svc }) => {
    await create(svc, '-12');
    assert.is((await del(svc, '%2D12')).status, 204);
  });

  run();
}

const { test: down, run: runDown } = serviceSuite('HTTP DELETE with storage down', { plants: downRepository });
down('is 503 with Retry-After', async ({ svc }) => {
  const res = await del(svc, '1');
  assert.is(res.status, 503);
  assert.is(res.headers.get('retry-after'), '1');
});
runDown();
