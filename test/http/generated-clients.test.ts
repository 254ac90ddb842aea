import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import * as assert from 'uvu/assert';
import { startService, type Service } from '../support/http.js';
import { distRoot } from '../support/process.js';
import { suiteWith, type Setup } from '../support/suites.js';

/**
 * Clients generated from the served GET /openapi.json, run end to end as an integrator would: create (ids beyond
 * 2^53 included), list page by page through the Link header, delete. TypeScript: openapi-typescript and
 * openapi-fetch, with both recipes for exact big ids (lossless-json; JSON.rawJSON where the runtime has it).
 * Python: openapi-python-client (scripts/install-openapi-python-client.sh). Go: oapi-codegen
 * (scripts/install-oapi-codegen.sh). Python again: openapi-generator `-g python` (scripts/install-openapi-generator.sh).
 * Each creates 2^53 and 2^53 + 1 exactly, reads a 409 and a 401 as the typed Error, lists every plant by following
 * Link as its library hands headers back, and deletes. The generators come from the install scripts (.ci/run runs
 * them); under CI=true a missing one fails the run, otherwise its suite is skipped with the line that says how to
 * install it. What a generator made (and the Go binary built from it) is kept under the cache directory by the hash
 * of the served document, the client's source and the generator's version, so the second run of the suite (CI runs
 * it on two Node.js versions) and an unchanged document cost a run of the client only.
 */
const repo = join(distRoot, '..');
const sources = join(repo, 'test', 'http', 'clients');
const run = promisify(execFile);
const workDir = (prefix: string) => {
  // Inside the repository, so that the client resolves openapi-fetch and lossless-json from its node_modules.
  const parent = join(distRoot, 'test-artifacts');
  mkdirSync(parent, { recursive: true });
  return mkdtempSync(join(parent, prefix));
};

interface Seen {
  readonly rawJSON?: boolean;
  readonly created: number[];
  readonly conflict: { readonly error: number; readonly message: string };
  readonly unauthorized: { readonly error: number; readonly message: string };
  readonly before: { readonly names: string[]; readonly pages: number };
  readonly deleted: number;
  readonly deletedAgain: number;
  readonly after: { readonly names: string[]; readonly pages: number };
}

/** What the service holds for alice afterwards, read with plain fetch: the client's view is not taken on trust. */
const storedNames = async (svc: Service) => {
  const res = await svc.call('GET', '/plants?limit=1000', { token: svc.token.alice });
  return (res.json() as Array<{ name: string }>).map((p) => p.name);
};

const CONFLICT = { error: 409, message: 'id: a plant with this id and a different name or tag already exists' };
const UNAUTHORIZED = { error: 401, message: 'authorization: the bearer token is unknown, expired or revoked' };

/** What every client must have seen: `names` created (ascending by id), then 2^53 + 1 deleted. */
const assertSeen = async (svc: Service, seen: Seen, names: string[]) => {
  assert.equal(
    seen.created,
    names.map(() => 200),
  );
  assert.equal(seen.conflict, CONFLICT, 'the 409 read as the typed Error');
  assert.equal(seen.unauthorized, UNAUTHORIZED, 'the 401 read as the typed Error');
  assert.equal(seen.before, { names, pages: Math.ceil(names.length / 2) }, 'ascending by id, two per page');
  assert.is(seen.deleted, 204);
  assert.is(seen.deletedAgain, 404);
  const left = names.filter((n) => n !== '2^53 + 1');
  assert.equal(seen.after, { names: left, pages: 1 });
  assert.equal(await storedNames(svc), left, '2^53 and 2^53 + 1 were two plants; only the second is gone');
};

/**
 * A generator installed by scripts/<script> into the directory it prints (its VERSION line names it; `envVar`
 * overrides it), found by `marker` inside. Under CI=true a missing one fails the run; otherwise the suite is skipped.
 */
const installed = (
  name: string,
  script: string,
  envVar: string,
  dirName: (version: string) => string,
  marker: (version: string) => string,
): { dir: string; version: string } | { skip: string } => {
  const version = /^VERSION=(\S+)$/m.exec(readFileSync(join(repo, 'scripts', script), 'utf8'))?.[1] ?? '';
  const dir =
    process.env[envVar] ??
    join(process.env['XDG_CACHE_HOME'] ?? join(homedir(), '.cache'), 'plant-store', dirName(version));
  if (existsSync(join(dir, marker(version)))) return { dir, version };
  const reason = `${name} not found in ${dir} (install it with: bash scripts/${script})`;
  if (process.env['CI'] === 'true') throw new Error(`CI=true and ${reason}`);
  return { skip: reason };
};

/**
 * `make(dir)` fills a new directory once per `key` (the served document, the client's source, the generator's
 * version): a later run with the same key reuses it. Older entries of the same kind are removed.
 */
const cached = async (kind: string, key: string, make: (dir: string) => Promise<void>): Promise<string> => {
  const root =
    process.env['PLANT_STORE_GENERATED_CLIENTS_DIR'] ??
    join(process.env['XDG_CACHE_HOME'] ?? join(homedir(), '.cache'), 'plant-store', 'generated-clients');
  const name = `${kind}-${createHash('sha256').update(key).digest('hex').slice(0, 16)}`;
  const dir = join(root, name);
  if (existsSync(dir)) return dir;
  mkdirSync(root, { recursive: true });
  const building = mkdtempSync(join(root, `.${name}-`));
  try {
    await make(building);
    for (const old of readdirSync(root)) {
      if (old.startsWith(`${kind}-`)) rmSync(join(root, old), { recursive: true, force: true });
    }
    renameSync(building, dir);
  } finally {
    rmSync(building, { recursive: true, force: true });
  }
  return dir;
};

const served = async (svc: Service) => (await fetch(`${svc.base}/openapi.json`)).text();

interface Subject {
  readonly svc: Service;
  readonly teardown: () => Promise<void>;
}
const fresh: Setup<Subject> = async () => {
  const svc = await startService();
  return { svc, teardown: svc.close };
};

const typescript = suiteWith('a TypeScript client generated with openapi-typescript and openapi-fetch', fresh);

typescript.test(
  'typechecks, creates ids beyond 2^53 exactly, lists through the Link header and deletes',
  async (ctx) => {
    const { svc } = typescript.subject(ctx);
    const dir = workDir('ts-client-');
    try {
      // int64 as `number | bigint`: openapi-typescript's transform (its CLI types int64 as number only).
      const bigint = ts.factory.createKeywordTypeNode(ts.SyntaxKind.BigIntKeyword);
      const number = ts.factory.createKeywordTypeNode(ts.SyntaxKind.NumberKeyword);
      const ast = await openapiTS(new URL(`${svc.base}/openapi.json`), {
        transform: (schema) =>
          schema.format === 'int64' ? ts.factory.createUnionTypeNode([number, bigint]) : undefined,
      });
      writeFileSync(join(dir, 'schema.d.ts'), astToString(ast));
      copyFileSync(join(sources, 'plants-client.ts'), join(dir, 'plants-client.ts'));
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
            skipLibCheck: true,
          },
          files: ['plants-client.ts'],
        }),
      );
      const tsc = join(dirname(createRequire(import.meta.url).resolve('typescript/package.json')), 'bin', 'tsc');
      await run(process.execPath, [tsc, '-p', dir]).catch((e: { stdout?: string }) => {
        throw new Error(`the generated client does not typecheck:\n${e.stdout ?? JSON.stringify(e)}`);
      });
      const { stdout } = await run(process.execPath, [join(dir, 'plants-client.js'), svc.base, svc.token.alice]);
      const seen = JSON.parse(stdout) as Seen;
      const hasRawJSON = typeof (JSON as unknown as { rawJSON?: unknown }).rawJSON === 'function';
      assert.is(seen.rawJSON, hasRawJSON, 'the JSON.rawJSON recipe ran where the runtime has it');
      await assertSeen(svc, seen, ['int64 min', 'Monstera', '2^53', '2^53 + 1', ...(hasRawJSON ? ['2^53 + 3'] : [])]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
);

typescript.run();

const pythonGenerator = installed(
  'openapi-python-client',
  'install-openapi-python-client.sh',
  'PLANT_STORE_OPENAPI_PYTHON_CLIENT_DIR',
  (v) => `openapi-python-client-${v}`,
  () => join('bin', 'openapi-python-client'),
);
const python = suiteWith(
  'a Python client generated with openapi-python-client',
  'skip' in pythonGenerator
    ? pythonGenerator
    : async () => ({ ...(await fresh()), bin: join(pythonGenerator.dir, 'bin') }),
);

python.test('generates every operation, creates, lists through the Link header and deletes', async (ctx) => {
  const { svc, bin } = python.subject(ctx);
  const dir = workDir('py-client-');
  try {
    const doc = join(dir, 'openapi.json');
    writeFileSync(doc, await (await fetch(`${svc.base}/openapi.json`)).text());
    const env = { ...process.env, PATH: `${bin}:${process.env['PATH'] ?? ''}` };
    const generated = await run(
      join(bin, 'openapi-python-client'),
      ['generate', '--path', doc, '--output-path', join(dir, 'plants_api'), '--meta', 'none'],
      { env },
    );
    // It warns about every operation or piece it skips; a clean run prints nothing but its first line.
    assert.is(generated.stdout.trim(), `Generating ${join(dir, 'plants_api')}`, generated.stdout);
    const modules = ['plants/create_plant', 'plants/list_plants', 'plants/delete_plant', 'operations/health'];
    for (const m of modules) assert.ok(existsSync(join(dir, 'plants_api', 'api', `${m}.py`)), `${m} generated`);
    copyFileSync(join(sources, 'plants_client.py'), join(dir, 'plants_client.py'));
    const { stdout } = await run(join(bin, 'python'), [join(dir, 'plants_client.py'), svc.base, svc.token.alice], {
      env,
      cwd: dir,
    });
    await assertSeen(svc, JSON.parse(stdout) as Seen, ['int64 min', 'Monstera', '2^53', '2^53 + 1']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

python.run();

const goGenerator = installed(
  'oapi-codegen',
  'install-oapi-codegen.sh',
  'PLANT_STORE_OAPI_CODEGEN_DIR',
  (v) => `oapi-codegen-${v}`,
  () => join('bin', 'oapi-codegen'),
);
const go = suiteWith(
  'a Go client generated with oapi-codegen',
  'skip' in goGenerator ? goGenerator : async () => ({ ...(await fresh()), ...goGenerator }),
);

go.test(
  'builds, creates ids beyond 2^53 exactly, reads typed failures, lists through Link and deletes',
  async (ctx) => {
    const { svc, dir: tool, version } = go.subject(ctx);
    const doc = await served(svc);
    const source = readFileSync(join(sources, 'plants_client.go'), 'utf8');
    // Offline: the install script put the runtime the generated code imports into the module cache.
    const env = { ...process.env, GOPROXY: 'off', GOTOOLCHAIN: 'local', GOFLAGS: '-mod=readonly' };
    const built = await cached('go', `${version}\0${doc}\0${source}`, async (dir) => {
      mkdirSync(join(dir, 'plants'));
      writeFileSync(join(dir, 'openapi.json'), doc);
      writeFileSync(
        join(dir, 'oapi-codegen.yaml'),
        'package: plants\ngenerate:\n  client: true\n  models: true\noutput: plants/plants.gen.go\n',
      );
      const generated = await run(join(tool, 'bin', 'oapi-codegen'), ['-config', 'oapi-codegen.yaml', 'openapi.json'], {
        cwd: dir,
      });
      assert.is(generated.stderr.trim(), '', 'oapi-codegen generates without a warning');
      for (const f of ['go.mod', 'go.sum']) copyFileSync(join(tool, 'module', f), join(dir, f));
      writeFileSync(join(dir, 'main.go'), source);
      await run('go', ['vet', './...'], { cwd: dir, env }).catch((e: { stderr?: string }) => {
        throw new Error(`the generated Go client does not vet:\n${e.stderr ?? JSON.stringify(e)}`);
      });
      await run('go', ['build', '-o', 'plants-client', '.'], { cwd: dir, env });
    });
    const { stdout } = await run(join(built, 'plants-client'), [svc.base, svc.token.alice]);
    await assertSeen(svc, JSON.parse(stdout) as Seen, ['int64 min', 'Monstera', '2^53', '2^53 + 1']);
  },
);

go.run();

const openapiGenerator = installed(
  'openapi-generator',
  'install-openapi-generator.sh',
  'PLANT_STORE_OPENAPI_GENERATOR_DIR',
  (v) => `openapi-generator-${v}`,
  (v) => `openapi-generator-cli-${v}.jar`,
);
const pythonOg = suiteWith(
  'a Python client generated with openapi-generator (-g python)',
  'skip' in openapiGenerator ? openapiGenerator : async () => ({ ...(await fresh()), ...openapiGenerator }),
);

pythonOg.test('creates ids beyond 2^53, reads typed failures, lists through Link and deletes', async (ctx) => {
  const { svc, dir: tool, version } = pythonOg.subject(ctx);
  const doc = await served(svc);
  const source = readFileSync(join(sources, 'plants_openapi_generator.py'), 'utf8');
  const built = await cached('openapi-generator-python', `${version}\0${doc}\0${source}`, async (dir) => {
    writeFileSync(join(dir, 'openapi.json'), doc);
    const jar = join(tool, `openapi-generator-cli-${version}.jar`);
    const { stdout } = await run('java', [
      '-jar',
      jar,
      'generate',
      '-i',
      join(dir, 'openapi.json'),
      '-g',
      'python',
      '-o',
      join(dir, 'generated'),
      '--package-name',
      'plants_api',
    ]);
    // What it warns about and what it still says about 3.1 (beta) is listed in docs/API.md.
    assert.ok(!/\bERROR\b/.test(stdout), stdout);
    renameSync(join(dir, 'generated', 'plants_api'), join(dir, 'plants_api'));
    rmSync(join(dir, 'generated'), { recursive: true, force: true });
    writeFileSync(join(dir, 'plants_openapi_generator.py'), source);
  });
  const { stdout } = await run(
    join(tool, 'venv', 'bin', 'python'),
    [join(built, 'plants_openapi_generator.py'), svc.base, svc.token.alice],
    { cwd: built },
  );
  await assertSeen(svc, JSON.parse(stdout) as Seen, ['int64 min', 'Monstera', '2^53', '2^53 + 1']);
});

pythonOg.run();
