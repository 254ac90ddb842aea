import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';

/**
 * What the docs name that can drift from the tree: the files and folders they name, the pages and headings they link
 * to, the Node.js versions CI installs, and the alerts and recording rules of ops/prometheus/rules.yml. The pages:
 * README.md, docs/*.md and client/README.md.
 */
const test = suite('the docs: files, links and versions they name');
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const pages = [
  'README.md',
  'client/README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];
const read = (page: string) => readFileSync(join(root, page), 'utf8');

/** GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, spaces as `-`. */
const slug = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
const anchors = (page: string) => new Set([...read(page).matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1] ?? '')));

const TOP = /^(?:\.ci|adapters|application|bench|bootstrap|client|docs|domain|harness|ops|scripts|test)\//;

test('every file or folder of the repository a page names in backticks exists', () => {
  const missing: string[] = [];
  for (const page of pages)
    for (const [, named = ''] of read(page).matchAll(/`([^`\s]+)`/g)) {
      // A pattern or a placeholder (`adapters/tokens/{static,redis,jwt}`, `scripts/install-*.sh`) names no one file,
      // and `application/json` is a media type.
      if (!TOP.test(named) || /[<>{}*]|\.\.\.|^application\/json/.test(named)) continue;
      const path = join(root, named.replace(/\/$/, ''));
      // A suite may be named without `.test.ts`, a module by what it compiles to (`bootstrap/main.js`).
      const candidates = [path, `${path}.ts`, `${path}.test.ts`, path.replace(/\.js$/, '.ts')];
      if (!candidates.some((p) => existsSync(p))) missing.push(`${page}: ${named}`);
    }
  assert.equal(missing, []);
});

test('every link to a page of the repository reaches a file, and its #anchor a heading there', () => {
  const broken: string[] = [];
  for (const page of pages)
    for (const [, target = '', anchor] of read(page).matchAll(/\]\(([^)#\s]*)(?:#([^)\s]+))?\)/g)) {
      if (/^[a-z]+:/.test(target)) continue;
      const file = target === '' ? page : normalize(join(dirname(page), target));
      if (!existsSync(join(root, file))) broken.push(`${page}: ${target}`);
      else if (anchor !== undefined && file.endsWith('.md') && !anchors(file).has(anchor))
        broken.push(`${page}: ${target}#${anchor}`);
    }
  assert.equal(broken, []);
});

test('the Node.js versions docs/operations.md says CI runs are the ones the install scripts fetch', () => {
  const doc = read('docs/operations.md');
  for (const line of ['24', '26']) {
    const script = `scripts/install-node${line}.sh`;
    const fetched = /^VERSION=(\S+)$/m.exec(read(script))?.[1];
    const stated = new RegExp(`CI runs every test on (\\S+) \\(\`${script.replace(/\./g, '\\.')}\`\\)`).exec(doc)?.[1];
    assert.ok(fetched !== undefined && fetched.startsWith(`${line}.`), script);
    assert.is(stated, fetched, `docs/operations.md on Node.js ${line}`);
  }
});

test('docs/operations.md has a runbook for every alert that notifies someone, and names only rules that exist', () => {
  const rules = read('ops/prometheus/rules.yml');
  const notifying = [...rules.matchAll(/- alert: (\w+)[\s\S]*?severity: (\w+)/g)]
    .filter((m) => m[2] !== 'none')
    .map((m) => m[1]);
  const doc = read('docs/operations.md');
  const runbooks = [...doc.matchAll(/^### (PlantStore\w+)$/gm)].map((m) => m[1]);
  assert.equal([...runbooks].sort(), [...new Set(notifying)].sort());
  const records = new Set([...rules.matchAll(/- record: (\S+)/g)].map((m) => m[1]));
  // `job:...:ratio_rate<window>` stands for one rule per window.
  const named = [...doc.matchAll(/`(job[\w:]*:[\w:]+)(<window>)?`/g)].filter((m) => m[2] === undefined);
  assert.ok(named.length > 0, 'docs/operations.md names recording rules');
  for (const [, rule] of named) assert.ok(records.has(rule), `${rule} is a recording rule of rules.yml`);
});

test.run();
