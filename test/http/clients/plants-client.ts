// A client of the Plant Store API as an integrator writes it: openapi-fetch over types that openapi-typescript
// generated from the served /openapi.json (schema.d.ts beside this file; int64 typed `number | bigint`).
// Usage: node plants-client.js <base URL> <token>. Prints one JSON line of what it saw.
import createClient from 'openapi-fetch';
import { stringify } from 'lossless-json';
import type { paths } from './schema.js';

const [baseUrl = '', token = ''] = process.argv.slice(2);
const headers = { authorization: `Bearer ${token}` };

// Recipe 1 (Node.js 20+, any browser): lossless-json writes a bigint as its exact digits.
const lossless = createClient<paths>({ baseUrl, headers, bodySerializer: (body) => stringify(body) ?? '' });

// Recipe 2 (Node.js 22+, current browsers): JSON.rawJSON, where the runtime has it.
const rawJSON = (JSON as unknown as { rawJSON?: (text: string) => unknown }).rawJSON;
const raw =
  rawJSON === undefined
    ? undefined
    : createClient<paths>({
        baseUrl,
        headers,
        bodySerializer: (body) =>
          JSON.stringify(body, (_key, value: unknown) => (typeof value === 'bigint' ? rawJSON(String(value)) : value)),
      });

const TWO_TO_53 = 9007199254740992n;

const created: number[] = [];
for (const body of [
  { id: 1, name: 'Monstera', tag: 'indoor' },
  { id: TWO_TO_53, name: '2^53' },
  { id: TWO_TO_53 + 1n, name: '2^53 + 1' },
  { id: -9223372036854775808n, name: 'int64 min' },
]) {
  created.push((await lossless.POST('/plants', { body })).response.status);
}
if (raw !== undefined)
  created.push((await raw.POST('/plants', { body: { id: TWO_TO_53 + 3n, name: '2^53 + 3' } })).response.status);

// The typed failures: a conflicting create (409) and an unknown token (401), each the Error body as `error`.
const conflict = (await lossless.POST('/plants', { body: { id: 1, name: 'Fern' } })).error;
const stranger = createClient<paths>({ baseUrl, headers: { authorization: 'Bearer not-a-token-of-this-service' } });
const unauthorized = (await stranger.GET('/plants', {})).error;

/** Every plant, one page of `limit` at a time, following the Link header's next page. */
const listAll = async (limit: number) => {
  const names: string[] = [];
  let pages = 0;
  let cursor: string | undefined;
  for (;;) {
    const { data, response } = await lossless.GET('/plants', {
      params: { query: cursor === undefined ? { limit } : { limit, cursor } },
    });
    if (data === undefined) throw new Error(`GET /plants answered ${response.status}`);
    pages += 1;
    names.push(...data.map((plant) => plant.name));
    const next = /<([^>]*)>;\s*rel="next"/.exec(response.headers.get('Link') ?? '')?.[1];
    if (next === undefined) return { names, pages };
    cursor = new URL(next, baseUrl).searchParams.get('cursor') ?? undefined;
  }
};

const before = await listAll(2);
const id = String(TWO_TO_53 + 1n);
const deleted = (await lossless.DELETE('/plants/{id}', { params: { path: { id } } })).response.status;
const deletedAgain = (await lossless.DELETE('/plants/{id}', { params: { path: { id } } })).response.status;
const after = await listAll(100);

process.stdout.write(
  `${JSON.stringify({ rawJSON: raw !== undefined, created, conflict, unauthorized, before, deleted, deletedAgain, after })}\n`,
);
