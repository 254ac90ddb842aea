import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
 * Python: openapi-python-client (scripts/install-openapi-python-client.sh), where installed.
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
        throw new Error(`the generated client does not typecheck:\n${e.stdout ?? String(e)}`);
      });
      const { stdout } = await run(process.execPath, [join(dir, 'plants-client.js'), svc.base, svc.token.alice]);
      const seen = JSON.parse(stdout) as Seen;
      const hasRawJSON = typeof (JSON as unknown as { rawJSON?: unknown }).rawJSON === 'function';
      assert.is(seen.rawJSON, hasRawJSON, 'the JSON.rawJSON recipe ran where the runtime has it');
      const names = ['int64 min', 'Monstera', '2^53', '2^53 + 1', ...(hasRawJSON ? ['2^53 + 3'] : [])];
      assert.equal(
        seen.created,
        names.map(() => 200),
      );
      assert.equal(seen.before, { names, pages: Math.ceil(names.length / 2) }, 'ascending by id, two per page');
      assert.is(seen.deleted, 204);
      assert.is(seen.deletedAgain, 404);
      const left = names.filter((n) => n !== '2^53 + 1');
      assert.equal(seen.after, { names: left, pages: 1 });
      assert.equal(await storedNames(svc), left, '2^53 and 2^53 + 1 were two plants; only the second is gone');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
);

typescript.run();

/** openapi-python-client from scripts/install-openapi-python-client.sh; under CI=true a missing one fails the run. */
const pythonGenerator = (): { bin: string } | { skip: string } => {
  const script = readFileSync(join(repo, 'scripts', 'install-openapi-python-client.sh'), 'utf8');
  const version = /^VERSION=(\S+)$/m.exec(script)?.[1] ?? '';
  const dir =
    process.env['PLANT_STORE_OPENAPI_PYTHON_CLIENT_DIR'] ??
    join(process.env['XDG_CACHE_HOME'] ?? join(homedir(), '.cache'), 'plant-store', `openapi-python-client-${version}`);
  const bin = join(dir, 'bin');
  if (existsSync(join(bin, 'openapi-python-client'))) return { bin };
  const reason = `openapi-python-client not found in ${dir} (install it with: bash scripts/install-openapi-python-client.sh)`;
  if (process.env['CI'] === 'true') throw new Error(`CI=true and ${reason}`);
  return { skip: reason };
};

const generator = pythonGenerator();
const python = suiteWith(
  'a Python client generated with openapi-python-client',
  'skip' in generator
    ? generator
    : async () => ({ ...(await (fresh as () => Promise<Subject>)()), bin: generator.bin }),
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
    const seen = JSON.parse(stdout) as Seen;
    const names = ['int64 min', 'Monstera', '2^53', '2^53 + 1'];
    assert.equal(seen.created, [200, 200, 200, 200]);
    assert.equal(seen.before, { names, pages: 2 });
    assert.is(seen.deleted, 204);
    assert.is(seen.deletedAgain, 404);
    const left = names.filter((n) => n !== '2^53 + 1');
    assert.equal(seen.after, { names: left, pages: 1 });
    assert.equal(await storedNames(svc), left);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

python.run();
