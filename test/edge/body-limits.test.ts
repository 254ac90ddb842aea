import { readFileSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { serviceSuite, type Service } from '../support/http.js';
import { runNode } from '../support/process.js';

/**
 * What parsing a create body may allocate is bounded before anything is built: nesting depth 64, and 10,000 object
 * members and array elements in the whole body (docs/operations.md, "Limits"). Ignored members used to be built in full: one
 * 16 MiB body cost about 600 MB of RSS.
 */
const MAX_DEPTH = 64;
const MAX_VALUES = 10_000;

const messageOf = (res: { json: () => unknown }) => (res.json() as { message: string }).message;
let nextId = 1;
const post = (svc: Service, body: string) => svc.call('POST', '/plants', { token: svc.token.alice, body });
/** A plant whose ignored member `extra` holds `json`. */
const withExtra = (json: string) => `{"id": ${nextId++}, "name": "x", "extra": ${json}}`;

const { test, run } = serviceSuite('edge: bounds on what a create body may hold', { bodyLimit: 1024 * 1024 });

test(`nesting ${MAX_DEPTH} deep is read; one level more is 400 naming the bound`, async ({ svc }) => {
  const nest = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);
  assert.is((await post(svc, withExtra(nest(MAX_DEPTH - 1)))).status, 200); // the body's own object is level 1
  const deep = await post(svc, withExtra(nest(MAX_DEPTH)));
  assert.is(deep.status, 400);
  assert.is(messageOf(deep), `body: must not nest objects and arrays more than ${MAX_DEPTH} deep`);
});

test(`${MAX_VALUES} members and elements in all are read; one more is 400 naming the bound`, async ({ svc }) => {
  // id, name and extra are 3 members; the array holds the rest.
  const elements = (n: number) => `[${'0,'.repeat(n - 1)}0]`;
  assert.is((await post(svc, withExtra(elements(MAX_VALUES - 3)))).status, 200);
  const many = await post(svc, withExtra(elements(MAX_VALUES - 2)));
  assert.is(many.status, 400);
  assert.is(messageOf(many), `body: must have at most ${MAX_VALUES} object members and array elements in total`);
  const members = Array.from({ length: MAX_VALUES }, (_, i) => `"m${i}": {}`).join(', ');
  assert.is((await post(svc, withExtra(`{${members}}`))).status, 400, 'members count as elements do');
});

test('a repeated member is 400 even when both values are equal', async ({ svc }) => {
  for (const body of [
    '{"id": 1, "name": "x", "name": "x"}',
    '{"id": 1, "id": 1, "name": "x"}',
    '{"id": 1, "name": "x", "extra": {"a": [1], "a": [1]}}',
    '{"id": 1, "name": "x", "\\u006eame": "x"}',
  ]) {
    const res = await post(svc, body);
    assert.is(res.status, 400, body);
    assert.is(messageOf(res), 'body: must not repeat a member name', body);
  }
});

run();

/**
 * The real process at the largest BODY_LIMIT (16 MiB): its peak RSS (VmHWM) while it parses 16 MiB bodies made of
 * what used to cost the most (one long string, many numbers, many objects, escapes) grows by a small multiple of
 * the body (measured: +33 to +66 MB), no more by up to 584 MB.
 */
const memory = suite('edge: memory per create body at BODY_LIMIT=16 MiB');
const MiB = 1024 * 1024;
const LIMIT = 16 * MiB;

/** Starts the service at BODY_LIMIT=16 MiB, posts one body, and answers its status and how much its peak RSS grew. */
const peakGrowth = async (body: string): Promise<{ status: number; grownMiB: number }> => {
  const token = 'memory-edge-token';
  const svc = runNode('bootstrap/main.js', {
    PORT: '0',
    HOST: '127.0.0.1',
    BODY_LIMIT: String(LIMIT),
    AUTH_TOKENS: JSON.stringify([{ token, owner: 'o', subject: 's', scopes: ['plants:write'] }]),
  });
  try {
    const [, port] = await svc.waitFor(/"port":(\d+).*"msg":"listening"/);
    const status = `/proc/${svc.child.pid as number}/status`;
    const peakMiB = () => Number(/VmHWM:\s+(\d+)/.exec(readFileSync(status, 'utf8'))?.[1]) / 1024;
    const post = async (text: string) => {
      const res = await fetch(`http://127.0.0.1:${port}/plants`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: text,
      });
      await res.arrayBuffer();
      return res.status;
    };
    assert.is(await post('{"id": 0, "name": "warm"}'), 200);
    const before = peakMiB();
    const answered = await post(body);
    return { status: answered, grownMiB: peakMiB() - before };
  } finally {
    svc.child.kill('SIGKILL');
    await svc.exited;
  }
};

const room = LIMIT - 64;
const shapes: Array<[string, () => string, number]> = [
  ['one long ignored string', () => withExtra(`"${'a'.repeat(room)}"`), 200],
  ['escapes in an ignored string', () => withExtra(`"${'\\u00e9'.repeat(room / 6)}"`), 200],
  ['numbers in an ignored array', () => withExtra(`[${'0,'.repeat(room / 2 - 1)}0]`), 400],
  ['objects in an ignored array', () => withExtra(`[${'{},'.repeat(room / 3 - 1)}{}]`), 400],
];
for (const [shape, make, expected] of shapes) {
  memory(`a 16 MiB body of ${shape}: peak RSS grows by less than 6x the body`, async () => {
    const body = make();
    assert.ok(Buffer.byteLength(body) <= LIMIT);
    const { status, grownMiB } = await peakGrowth(body);
    assert.is(status, expected);
    assert.ok(grownMiB < 6 * 16, `peak RSS grew ${grownMiB.toFixed(0)} MiB for a 16 MiB body`);
  });
}

memory.run();
