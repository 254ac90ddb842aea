import { execFile } from 'node:child_process';
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { chromium } from 'playwright-core';
import * as assert from 'uvu/assert';
import { corsPolicy } from '../../adapters/http/server/cors.js';
import { clientSchema, schemaPath } from '../support/client-schema.js';
import { startService, type Service } from '../support/http.js';
import { distRoot } from '../support/process.js';
import { storageBackends } from '../support/storage-backends.js';
import { suiteWith } from '../support/suites.js';

/**
 * The client package as its users get it, as client/README.md says: `npm run client:pack` in a fresh clone of the
 * repository (a `git clone` of HEAD: commit before running this), offline from npm's cache, then
 * `npm install <tarball>` in a scratch project; every `ts` block of the README type-checked there with strict
 * settings, its program and a program written from an earlier README run against the service on every storage
 * backend; a `number` id refused by tsc; CommonJS `require()`; its generated types equal to what the served document
 * generates.
 */
const repo = join(distRoot, '..');
const exec = promisify(execFile);
const tsc = join(dirname(createRequire(import.meta.url).resolve('typescript/package.json')), 'bin', 'tsc');

/** tsc over `files` in `dir` with strict settings, as a user's project would have them; its output when it fails. */
const typecheck = async (dir: string, files: string[]): Promise<string | undefined> => {
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        lib: ['ES2022', 'DOM'],
        types: ['node'],
        typeRoots: [join(repo, 'node_modules', '@types')],
        strict: true,
        noUncheckedIndexedAccess: true,
        exactOptionalPropertyTypes: true,
      },
      files,
    }),
  );
  try {
    await exec(process.execPath, [tsc, '-p', dir]);
    return undefined;
  } catch (e) {
    return (e as { stdout?: string }).stdout ?? String(e);
  }
};

/** npm never asks the registry here: what the packing and the install need is in npm's cache after `npm ci`. */
const offline = { ...process.env, npm_config_offline: 'true', npm_config_update_notifier: 'false' };

/**
 * A scratch project with the package installed as the README says, once per run: the repository cloned, the tarball
 * made there by `npm run client:pack`, copied into the project's vendor/ and installed by `npm install ./vendor/...`;
 * then the project (without node_modules) copied elsewhere, the clone and the first folder deleted, and `npm ci` run
 * in the copy, which every test uses.
 */
let project: Promise<string> | undefined;
const packaged = () =>
  (project ??= (async () => {
    const parent = join(distRoot, 'test-artifacts');
    mkdirSync(parent, { recursive: true });
    const scratch = mkdtempSync(join(parent, 'client-package-'));
    process.once('exit', () => rmSync(scratch, { recursive: true, force: true }));
    const clone = join(scratch, 'clone');
    await exec('git', ['clone', '--quiet', repo, clone]);
    await exec('npm', ['run', 'client:pack'], { cwd: clone, env: offline });
    const tarball = readdirSync(clone).find((f) => /^plant-store-client-.*\.tgz$/.test(f));
    if (tarball === undefined) throw new Error('npm run client:pack left no plant-store-client-*.tgz');
    const first = join(scratch, 'project');
    mkdirSync(join(first, 'vendor'), { recursive: true });
    copyFileSync(join(clone, tarball), join(first, 'vendor', tarball));
    writeFileSync(join(first, 'package.json'), '{"name": "scratch", "type": "module", "private": true}');
    const install = ['install', '--no-audit', '--no-fund', `./vendor/${tarball}`];
    await exec('npm', install, { cwd: first, env: offline });
    const moved = join(scratch, 'elsewhere', 'deeper', 'project');
    cpSync(first, moved, { recursive: true, filter: (from) => basename(from) !== 'node_modules' });
    rmSync(clone, { recursive: true });
    rmSync(first, { recursive: true });
    await exec('npm', ['ci', '--no-audit', '--no-fund'], { cwd: moved, env: offline });
    return moved;
  })());

const readme = () => readFileSync(join(repo, 'client', 'README.md'), 'utf8');

/** The ```ts blocks of client/README.md: its complete program first. */
const readmeBlocks = (): string[] => {
  const blocks = [...readme().matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1] ?? '');
  if (blocks.length === 0) throw new Error('client/README.md has no ```ts block');
  return blocks;
};

/**
 * The README's blocks (program.ts, block-2.ts, ...) and a program an integrator wrote from an earlier README
 * (compat-program.ts, kept as written: the API stays compatible with it) written into the scratch project and
 * type-checked, once: tsc's output when it fails.
 */
let programChecked: Promise<string | undefined> | undefined;
const readmeProgramChecked = () =>
  (programChecked ??= (async () => {
    const dir = await packaged();
    const files = readmeBlocks().map((block, i) => {
      const file = i === 0 ? 'program.ts' : `block-${i + 1}.ts`;
      writeFileSync(join(dir, file), block);
      return file;
    });
    writeFileSync(join(dir, 'compat-program.ts'), readFileSync(join(repo, 'test', 'client', 'compat-program.txt')));
    return typecheck(dir, [...files, 'compat-program.ts']);
  })());

const { test, run: runPackage } = suiteWith('the client package', async () => ({ dir: await packaged() }));

test('the packed files: README, CHANGELOG, package.json and the built modules with their types, nothing else', async () => {
  const installed = join(await packaged(), 'node_modules', '@plant-store', 'client');
  assert.equal(readdirSync(installed).sort(), ['CHANGELOG.md', 'README.md', 'dist', 'package.json']);
  assert.equal(
    readdirSync(join(installed, 'dist')).sort(),
    ['index', 'link', 'schema'].flatMap((m) => [`${m}.d.ts`, `${m}.js`]),
  );
});

test('installed from the project’s vendor/: a path inside the project, which npm ci follows in the moved copy', async () => {
  const dir = await packaged();
  const { version } = JSON.parse(readFileSync(join(repo, 'client', 'package.json'), 'utf8')) as { version: string };
  const spec = `file:vendor/plant-store-client-${version}.tgz`;
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Record<string, unknown>;
  assert.equal(manifest['dependencies'], { '@plant-store/client': spec });
  const lock = JSON.parse(readFileSync(join(dir, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { resolved?: string; version?: string }>;
  };
  const locked = lock.packages['node_modules/@plant-store/client'];
  assert.equal([locked?.resolved, locked?.version], [spec, version]);
  const installed = join(dir, 'node_modules', '@plant-store', 'client', 'package.json');
  assert.is((JSON.parse(readFileSync(installed, 'utf8')) as { version: string }).version, version);
});

test('the README’s install recipe and the CHANGELOG name the version in client/package.json', async () => {
  const { version } = JSON.parse(readFileSync(join(repo, 'client', 'package.json'), 'utf8')) as { version: string };
  const recipe = /^## Installing\n[\s\S]*?^```sh\n([\s\S]*?)^```$/m.exec(readme())?.[1] ?? '';
  const named = new Set([...recipe.matchAll(/plant-store-client-([^\s/]+)\.tgz/g)].map((m) => m[1]));
  assert.equal([...named], [version]);
  const changelog = readFileSync(join(repo, 'client', 'CHANGELOG.md'), 'utf8');
  assert.is(/^## (\S+)$/m.exec(changelog)?.[1], version, 'the newest entry of CHANGELOG.md');
});

test('the built package imports nothing but its own files: no node: module, no dependency', async () => {
  const built = join(await packaged(), 'node_modules', '@plant-store', 'client', 'dist');
  const js = readdirSync(built).filter((f) => f.endsWith('.js'));
  for (const file of js) {
    const text = readFileSync(join(built, file), 'utf8');
    const specifiers = [
      ...text.matchAll(/\b(?:import|export)\b[^'"();]*?['"]([^'"]+)['"]|\bimport\s*\(\s*['"]([^'"]+)/g),
    ];
    for (const [, from, dynamic] of specifiers)
      assert.match(from ?? dynamic ?? '', /^\.\//, `${file}: ${from ?? dynamic}`);
    assert.not.match(text, /\bnode:|\brequire\s*\(|\bprocess\.|\bBuffer\b/, file);
  }
});

test('a number id does not compile; a bigint id does', async () => {
  const dir = await packaged();
  writeFileSync(
    join(dir, 'number-id.ts'),
    [
      "import { PlantStore } from '@plant-store/client';",
      "const store = new PlantStore({ baseUrl: 'http://localhost:3000', token: 't' });",
      '// @ts-expect-error: an id is a bigint; a number would be rounded beyond 2^53',
      "await store.create({ id: 9007199254740993, name: 'Fern' });",
      '// @ts-expect-error: the same in a delete',
      'await store.delete(9007199254740993);',
      "await store.create({ id: 9007199254740993n, name: 'Fern' });",
      'await store.delete(9007199254740993n);',
      '',
    ].join('\n'),
  );
  // Each directive fails the compile ("Unused '@ts-expect-error' directive") if its line ever compiles.
  assert.is(await typecheck(dir, ['number-id.ts']), undefined);
});

test('every ts block of the README, and a program from an earlier README, type-check against the package', async () => {
  assert.is(await readmeProgramChecked(), undefined);
});

test('the README’s table of types is what the package exports beside its two classes, and they compile', async () => {
  const section = /^## Types\n([\s\S]*?)^## /m.exec(readme())?.[1] ?? '';
  const named = [...section.matchAll(/^\| `(\w+)` +\|/gm)].map((m) => m[1] ?? '');
  const dir = await packaged();
  const declarations = readFileSync(join(dir, 'node_modules', '@plant-store', 'client', 'dist', 'index.d.ts'), 'utf8');
  const exported = [...declarations.matchAll(/^export (?:declare )?(?:type|interface|class|const|function) (\w+)/gm)];
  assert.equal(
    exported.map((m) => m[1]).sort(),
    ['PlantStore', 'PlantStoreError', ...named].sort(),
    'index.d.ts exports exactly the README’s names',
  );
  writeFileSync(
    join(dir, 'types.ts'),
    `import type { ${named.join(', ')} } from '@plant-store/client';\n` +
      named.map((name) => `export type Uses${name} = ${name};\n`).join(''),
  );
  assert.is(await typecheck(dir, ['types.ts']), undefined);
});

test('with PLANT_STORE_TOKEN unset, each README block stops with the unauthorized error it describes', async () => {
  assert.is(await readmeProgramChecked(), undefined, 'they compile');
  const dir = await packaged();
  const said = 'token: must be a bearer token (1 to 4096 of [A-Za-z0-9-._~+/], then any "="), got an empty string';
  assert.ok(readme().replace(/\s+/g, ' ').includes(`\`${said}\``), 'the README quotes the message');
  for (const file of readmeBlocks().map((_, i) => (i === 0 ? 'program.js' : `block-${i + 1}.js`))) {
    // Port 9 (discard): nothing listens there, and nothing should be sent anyway.
    const ran = await exec(process.execPath, [join(dir, file)], {
      env: { PATH: process.env['PATH'] ?? '', PLANT_STORE_URL: 'http://127.0.0.1:9' },
    }).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code?: number; stderr?: string }) => ({ code: e.code, stderr: e.stderr ?? '' }),
    );
    assert.is(ran.code, 1, file);
    assert.ok(ran.stderr.includes(`PlantStoreError: ${said}`), `${file}: ${ran.stderr}`);
    assert.ok(ran.stderr.includes("kind: 'unauthorized'") && ran.stderr.includes('status: 0'), file);
  }
});

test('CommonJS: require() gives the package', async () => {
  const dir = await packaged();
  writeFileSync(
    join(dir, 'required.cjs'),
    [
      "const { PlantStore, PlantStoreError } = require('@plant-store/client');",
      "const store = new PlantStore({ baseUrl: 'http://127.0.0.1:9', token: 't' });",
      'store.page().catch((e) => console.log(e instanceof PlantStoreError, e.kind));',
      '',
    ].join('\n'),
  );
  const { stdout } = await exec(process.execPath, [join(dir, 'required.cjs')]);
  assert.is(stdout, 'true network\n');
});

test('the committed generated types are what the served document generates (npm run client:schema)', async () => {
  const svc = await startService();
  try {
    const generated = await clientSchema(new URL('/openapi.json', svc.base));
    assert.ok(
      generated === readFileSync(schemaPath, 'utf8'),
      'client/src/schema.ts differs from what GET /openapi.json generates: run `npm run client:schema` and commit it',
    );
  } finally {
    await svc.close();
  }
});

runPackage();

/** What the README program prints. */
const EXPECTED = [
  "{ name: 'Fern' }",
  "{ name: 'Moss', tag: 'shade' }",
  'listed Fern',
  'listed Moss',
  "[ { name: 'Fern' } ] more follow",
  'then Moss',
  'conflict 409 id: a plant with this id and a different name or tag already exists',
  'invalid name',
  'deleted',
  'deleted',
];

/** What the program written from an earlier README prints. */
const EXPECTED_COMPAT = [
  "{ name: 'Fern' }",
  "{ name: 'Moss', tag: 'shade' }",
  'listed Fern',
  'listed Moss',
  "[ { name: 'Fern' } ] more follow",
  '409 id: a plant with this id and a different name or tag already exists',
  'deleted',
  'deleted',
];

for (const backend of storageBackends()) {
  const setup = backend.setup;
  const { test, subject, run } = suiteWith(
    `the client README program [${backend.name}]`,
    typeof setup === 'function'
      ? async () => {
          const [dir, storage] = await Promise.all([packaged(), setup()]);
          const svc: Service = await startService({ plants: storage.repo });
          return {
            dir,
            svc,
            teardown: async () => {
              await svc.close();
              await storage.teardown();
            },
          };
        }
      : setup,
  );

  for (const [program, expected] of [
    ['program.js', EXPECTED],
    ['compat-program.js', EXPECTED_COMPAT],
  ] as const)
    test(`${program}: creates 2^53 and 2^53 + 1 as two plants, lists every page, reads a 409, deletes both`, async (ctx) => {
      const { dir, svc } = subject(ctx);
      assert.is(await readmeProgramChecked(), undefined, 'it compiles');
      const { stdout } = await exec(process.execPath, [join(dir, program)], {
        env: { PATH: process.env['PATH'] ?? '', PLANT_STORE_URL: svc.base, PLANT_STORE_TOKEN: svc.token.alice },
      });
      assert.equal(stdout.trimEnd().split('\n'), expected);
      const left = await svc.call('GET', '/plants', { token: svc.token.alice });
      assert.is(left.text, '[]', 'both deleted: 2^53 and 2^53 + 1 were two plants');
    });

  run();
}

/** Debian's chromium (as test/http/docs.test.ts finds it); with CI=true a missing one fails the run. */
const chromiumBin = (): { bin: string } | { skip: string } => {
  for (const c of [process.env['CHROMIUM_BIN'], '/usr/bin/chromium']) if (c && existsSync(c)) return { bin: c };
  const reason = 'chromium not found (install it with: apt-get install chromium)';
  if (process.env['CI'] === 'true') throw new Error(`CI=true and ${reason}`);
  return { skip: reason };
};
const chrome = chromiumBin();

/**
 * A browser on a page of another origin (a server of its own, serving the built package), the service allowing that
 * origin (CORS_ORIGINS): the client as a web application uses it.
 */
const browsing = suiteWith(
  'the client package in headless chromium, from another origin',
  'skip' in chrome
    ? chrome
    : async () => {
        const built = join(await packaged(), 'node_modules', '@plant-store', 'client', 'dist');
        const app = createServer((req, res) => {
          const file = /^\/client\/([a-z]+\.js)$/.exec(req.url ?? '')?.[1];
          if (file !== undefined && existsSync(join(built, file))) {
            res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' });
            res.end(readFileSync(join(built, file)));
          } else {
            res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
            res.end('<!doctype html><title>app</title>');
          }
        });
        await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
        const origin = `http://127.0.0.1:${(app.address() as AddressInfo).port}`;
        const svc = await startService({ cors: corsPolicy([origin]) });
        const browser = await chromium.launch({
          executablePath: chrome.bin,
          headless: true,
          args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
        });
        return {
          svc,
          origin,
          browser,
          teardown: async () => {
            await browser.close();
            await svc.close();
            await new Promise((resolve) => app.close(resolve));
          },
        };
      },
);

browsing.test(
  'creates 2^53 + 1 exactly, lists every page through Link, and reads a failure’s request id',
  async (ctx) => {
    const { svc, origin, browser } = browsing.subject(ctx);
    const page = await browser.newPage();
    await page.goto(`${origin}/`);
    type Seen = { names: string[]; deleted: string; failure: [number, string, string | undefined] | string };
    // A string, so that tsc does not look for the page's module here.
    const seen = await page.evaluate<Seen>(`(async () => {
    const { PlantStore, PlantStoreError } = await import('/client/index.js');
    const store = new PlantStore({ baseUrl: ${JSON.stringify(svc.base)}, token: ${JSON.stringify(svc.token.alice)} });
    await store.create({ id: 2n ** 53n, name: '2^53' });
    await store.create({ id: 2n ** 53n + 1n, name: '2^53 + 1' });
    const names = [];
    for await (const plant of store.list({ limit: 1 })) names.push(plant.name);
    const deleted = await store.delete(2n ** 53n + 1n);
    const failure = await store.delete(2n ** 53n + 1n).catch((e) => e);
    return {
      names,
      deleted,
      failure: failure instanceof PlantStoreError ? [failure.status, failure.message, failure.requestId] : String(failure),
    };
  })()`);
    assert.equal(seen.names, ['2^53', '2^53 + 1'], 'both pages: the Link header is exposed to the page');
    assert.is(seen.deleted, 'deleted');
    assert.equal(seen.failure.slice(0, 2), [404, 'id: no plant with this id']);
    assert.match(String(seen.failure[2]), /^[A-Za-z0-9._:-]{1,128}$/, 'X-Request-Id is exposed to the page');
    const left = await svc.call('GET', '/plants', { token: svc.token.alice });
    assert.is(left.text, '[{"name":"2^53"}]', 'the other plant is 2^53, untouched');
  },
);

browsing.run();
