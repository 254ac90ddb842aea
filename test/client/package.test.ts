import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import * as assert from 'uvu/assert';
import { clientSchema, schemaPath } from '../support/client-schema.js';
import { startService, type Service } from '../support/http.js';
import { distRoot } from '../support/process.js';
import { storageBackends } from '../support/storage-backends.js';
import { suiteWith } from '../support/suites.js';

/**
 * The client package as its users get it: built by its own tsconfig (DOM lib, no Node.js types) into
 * node_modules/@plant-store/client of a scratch project, imported there by name through its `exports`; the program of
 * its README type-checked and run against the service on every storage backend; a `number` id refused by tsc; its
 * generated types equal to what the served document generates.
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

/** A scratch project with the package built and installed, once per run. */
let project: Promise<string> | undefined;
const packaged = () =>
  (project ??= (async () => {
    const parent = join(distRoot, 'test-artifacts');
    mkdirSync(parent, { recursive: true });
    const dir = mkdtempSync(join(parent, 'client-package-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    const installed = join(dir, 'node_modules', '@plant-store', 'client');
    await exec(process.execPath, [
      tsc,
      '-p',
      join(repo, 'client', 'tsconfig.json'),
      '--outDir',
      join(installed, 'dist'),
    ]);
    copyFileSync(join(repo, 'client', 'package.json'), join(installed, 'package.json'));
    writeFileSync(join(dir, 'package.json'), '{"type": "module", "private": true}');
    return dir;
  })());

/** The first ```ts block of client/README.md: its complete program. */
const readmeProgram = (): string => {
  const readme = readFileSync(join(repo, 'client', 'README.md'), 'utf8');
  const program = /^```ts\n([\s\S]*?)^```$/m.exec(readme)?.[1];
  if (program === undefined) throw new Error('client/README.md has no ```ts block');
  return program;
};

/** The README program written into the scratch project and type-checked, once: tsc's output when it fails. */
let programChecked: Promise<string | undefined> | undefined;
const readmeProgramChecked = () =>
  (programChecked ??= (async () => {
    const dir = await packaged();
    writeFileSync(join(dir, 'program.ts'), readmeProgram());
    return typecheck(dir, ['program.ts']);
  })());

const { test, run: runPackage } = suiteWith('the client package', async () => ({ dir: await packaged() }));

test('the built package imports nothing but its own files: no node: module, no dependency', async () => {
  const built = join(await packaged(), 'node_modules', '@plant-store', 'client', 'dist');
  const js = readdirSync(built).filter((f) => f.endsWith('.js'));
  assert.equal(js.sort(), ['index.js', 'schema.js']);
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

test('the README program type-checks against the package', async () => {
  assert.is(await readmeProgramChecked(), undefined);
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

/** What the README program prints, given the request ids it cannot know. */
const EXPECTED = [
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

  test('creates 2^53 and 2^53 + 1 as two plants, lists every page, reads a 409 and deletes both', async (ctx) => {
    const { dir, svc } = subject(ctx);
    assert.is(await readmeProgramChecked(), undefined, 'it compiles');
    const { stdout } = await exec(process.execPath, [join(dir, 'program.js')], {
      env: { PATH: process.env['PATH'] ?? '', PLANT_STORE_URL: svc.base, PLANT_STORE_TOKEN: svc.token.alice },
    });
    assert.equal(stdout.trimEnd().split('\n'), EXPECTED);
    const left = await svc.call('GET', '/plants', { token: svc.token.alice });
    assert.is(left.text, '[]', 'both deleted: 2^53 and 2^53 + 1 were two plants');
  });

  run();
}
