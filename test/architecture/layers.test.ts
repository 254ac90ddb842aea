import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cruise, type IForbiddenRuleType } from 'dependency-cruiser';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';

/**
 * The hexagon's rules, checked on the TypeScript sources: the domain depends on nothing but fp-ts and io-ts; the
 * application on the domain and those two; adapters never on bootstrap; the HTTP machinery (adapters/http/server)
 * never on the API above it (adapters/http/api); no production code on tests; no import cycle.
 */
const PURE_PACKAGES = '^node_modules/(fp-ts|io-ts)/';
const rules: IForbiddenRuleType[] = [
  {
    name: 'domain-is-pure',
    severity: 'error',
    comment: 'domain/ imports only domain/, fp-ts and io-ts',
    from: { path: '^domain/' },
    to: { pathNot: [`^domain/`, PURE_PACKAGES] },
  },
  {
    name: 'application-depends-on-ports-only',
    severity: 'error',
    comment: 'application/ imports only application/, domain/, fp-ts and io-ts: no adapter, driver, polka or node:http',
    from: { path: '^application/' },
    to: { pathNot: [`^(application|domain)/`, PURE_PACKAGES] },
  },
  {
    name: 'adapters-do-not-wire',
    severity: 'error',
    comment: 'adapters/ never import bootstrap/',
    from: { path: '^adapters/' },
    to: { path: '^bootstrap/' },
  },
  {
    name: 'adapters-do-not-import-one-another',
    severity: 'error',
    comment:
      'an adapter (adapters/http, adapters/storage/<name>, adapters/tokens/<name>, ...) imports no other adapter',
    from: { path: '^adapters/((?:storage|tokens|rate-limit)/[^/]+|[^/]+)/' },
    to: { path: '^adapters/', pathNot: '^adapters/$1/' },
  },
  {
    name: 'http-edge-holds-the-application-only',
    severity: 'error',
    comment: 'adapters/http reaches use cases through the Application; it imports no driven port (the logger aside)',
    from: { path: '^adapters/http/' },
    to: { path: '^application/ports/', pathNot: '^application/ports/logger[.]ts$' },
  },
  {
    name: 'http-machinery-does-not-import-the-api',
    severity: 'error',
    comment:
      'adapters/http/server/ (the HTTP machinery: transport, body and JSON reading, dispatch) never imports adapters/http/api/ (the API room above it): imports point one way',
    from: { path: '^adapters/http/server/' },
    to: { path: '^adapters/http/api/' },
  },
  {
    name: 'bench-does-not-import-tests',
    severity: 'error',
    comment: 'bench/ and test/ share harness/ (the servers they start), never each other',
    from: { path: '^bench/' },
    to: { path: '^test/' },
  },
  {
    name: 'no-import-cycles',
    severity: 'error',
    comment: 'no module reaches itself through its imports, type-only ones included: each room reads one way',
    from: {},
    to: { circular: true },
  },
  {
    name: 'production-code-does-not-import-tests',
    severity: 'error',
    from: { path: '^(domain|application|adapters|bootstrap)/' },
    to: { path: '^(test|bench|harness)/' },
  },
];

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

const violationsIn = async (baseDir: string, folders: string[]) => {
  const result = await cruise(folders, {
    baseDir,
    validate: true,
    ruleSet: { forbidden: rules },
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|node_modules)/' },
  });
  if (typeof result.output === 'string') throw new Error('unexpected string output');
  return {
    modules: result.output.modules.length,
    violations: result.output.summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`),
  };
};

const test = suite('layer rules');

test('domain, application, adapters and bootstrap import only the ways the hexagon allows', async () => {
  const { modules, violations } = await violationsIn(root, ['domain', 'application', 'adapters', 'bootstrap', 'bench']);
  assert.ok(modules > 20, `cruised ${modules} modules`);
  assert.equal(violations, []);
});

test('the rules catch a domain file importing polka, an application file importing an adapter or node:http', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'layers-'));
  try {
    for (const d of ['domain', 'application', 'adapters/storage']) mkdirSync(join(dir, d), { recursive: true });
    writeFileSync(join(dir, 'adapters/storage/store.ts'), 'export const store = 1;\n');
    writeFileSync(join(dir, 'domain/bad.ts'), "import polka from 'polka';\nexport const x = polka;\n");
    writeFileSync(
      join(dir, 'application/bad.ts'),
      "import { store } from '../adapters/storage/store.js';\nimport { createServer } from 'node:http';\nexport const y = [store, createServer];\n",
    );
    const { violations } = await violationsIn(dir, ['domain', 'application', 'adapters']);
    assert.ok(
      violations.some((v) => v.startsWith('domain-is-pure: domain/bad.ts')),
      violations.join('\n'),
    );
    assert.ok(
      violations.some(
        (v) => v === 'application-depends-on-ports-only: application/bad.ts -> adapters/storage/store.ts',
      ),
      violations.join('\n'),
    );
    assert.ok(
      violations.some(
        (v) =>
          v.startsWith('application-depends-on-ports-only: application/bad.ts -> node:http') || v.endsWith('-> http'),
      ),
      violations.join('\n'),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the rules catch one adapter importing another, the HTTP edge importing a port, the HTTP machinery importing the API, and bench importing tests', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'layers-'));
  try {
    const files: Record<string, string> = {
      'application/ports/plant-repository.ts': 'export const port = 1;\n',
      'application/ports/logger.ts': 'export const logger = 1;\n',
      'adapters/storage/memory/store.ts': 'export const store = 1;\n',
      'adapters/storage/mongodb/store.ts': "import { store } from '../memory/store.js';\nexport const other = store;\n",
      'adapters/rate-limit/redis/limiter.ts':
        "import { store } from '../../storage/memory/store.js';\nexport const l = store;\n",
      'adapters/http/edge.ts':
        "import { port } from '../../application/ports/plant-repository.js';\nimport { logger } from '../../application/ports/logger.js';\nexport const e = [port, logger];\n",
      'adapters/http/inner/handler.ts': "import { e } from '../edge.js';\nexport const h = e;\n",
      'adapters/http/server/server.ts': "import { routes } from '../api/routes.js';\nexport const s = routes;\n",
      'adapters/http/api/routes.ts': 'export const routes = 1;\n',
      'adapters/http/api/app.ts':
        "import { routes } from './routes.js';\nimport { s } from '../server/server.js';\nexport const a = [routes, s];\n",
      'test/support/servers.ts': 'export const servers = 1;\n',
      'bench/run.ts': "import { servers } from '../test/support/servers.js';\nexport const b = servers;\n",
    };
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(join(dir, dirname(path)), { recursive: true });
      writeFileSync(join(dir, path), text);
    }
    const { violations } = await violationsIn(dir, ['application', 'adapters', 'bench']);
    const expected = [
      'adapters-do-not-import-one-another: adapters/storage/mongodb/store.ts -> adapters/storage/memory/store.ts',
      'adapters-do-not-import-one-another: adapters/rate-limit/redis/limiter.ts -> adapters/storage/memory/store.ts',
      'http-edge-holds-the-application-only: adapters/http/edge.ts -> application/ports/plant-repository.ts',
      'bench-does-not-import-tests: bench/run.ts -> test/support/servers.ts',
      'http-machinery-does-not-import-the-api: adapters/http/server/server.ts -> adapters/http/api/routes.ts',
    ];
    assert.equal(
      [...violations].sort(),
      [...expected].sort(),
      'exactly these, and none for the logger or within one adapter',
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the rules catch an import cycle, also through type-only imports', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'layers-'));
  try {
    mkdirSync(join(dir, 'adapters/http'), { recursive: true });
    writeFileSync(join(dir, 'adapters/http/a.ts'), "import type { B } from './b.js';\nexport type A = B | 1;\n");
    writeFileSync(join(dir, 'adapters/http/b.ts'), "import { type A } from './a.js';\nexport type B = A | 2;\n");
    const { violations } = await violationsIn(dir, ['adapters']);
    assert.ok(
      violations.some((v) => v.startsWith('no-import-cycles: adapters/http/')),
      violations.join('\n'),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
