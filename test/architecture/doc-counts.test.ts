import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';

/**
 * The line counts docs/architecture.md states are the tree's, to the nearest hundred: the two rooms of the HTTP edge
 * and the newcomer's reading list (every file it names, summed).
 */
const test = suite('docs/architecture.md: the counts it states');
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const doc = readFileSync(join(root, 'docs', 'architecture.md'), 'utf8');

const linesOf = (path: string): number => readFileSync(join(root, path), 'utf8').split('\n').length - 1;
const linesUnder = (dir: string): number =>
  readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .reduce((sum, f) => sum + linesOf(join(dir, f)), 0);
const stated = (pattern: RegExp): number => {
  const found = pattern.exec(doc)?.[1];
  assert.ok(found !== undefined, `docs/architecture.md states ${String(pattern)}`);
  return Number(found.replace(/,/g, ''));
};
const nearestHundred = (n: number): number => Math.round(n / 100) * 100;

test('the api/ and server/ rooms have the lines it says', () => {
  const api = linesUnder('adapters/http/api');
  const server = linesUnder('adapters/http/server');
  assert.is(stated(/`api\/`:[^(]*\(about ([\d,]+) lines/), nearestHundred(api), `api/ has ${api} lines`);
  assert.is(stated(/`server\/`:[^(]*\(about ([\d,]+) lines/), nearestHundred(server), `server/ has ${server} lines`);
  const openapi = linesOf('adapters/http/api/openapi.ts');
  assert.is(stated(/lines, ([\d,]+) of them the\s+OpenAPI document/), nearestHundred(openapi));
});

test('the reading list of the three operations has the lines it says, in files that exist', () => {
  const section = doc.slice(doc.indexOf('## Reading the three operations'), doc.indexOf('`server/` can be taken'));
  const files = [...section.matchAll(/`((?:domain|application|adapters)\/[\w/.-]+\.ts)`/g)]
    .map((m) => m[1] as string)
    .filter((f) => f !== 'adapters/http/api/openapi.ts'); // the reference beside the list, not in it
  assert.ok(files.length >= 10, `${files.length} files listed`);
  const total = files.reduce((sum, f) => sum + linesOf(f), 0);
  assert.is(stated(/in this order \(about ([\d,]+) lines in all\)/), nearestHundred(total), `${total} lines`);
});

test.run();
