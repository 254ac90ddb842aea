import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cruise, type IForbiddenRuleType } from 'dependency-cruiser';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';

/**
 * The hexagon's rules, checked on the TypeScript sources: the domain depends on nothing but fp-ts and io-ts; the
 * application on the domain and those two; adapters never on bootstrap; no production code on tests.
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
    name: 'production-code-does-not-import-tests',
    severity: 'error',
    from: { path: '^(domain|application|adapters|bootstrap)/' },
    to: { path: '^(test|bench)/' },
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
  const { modules, violations } = await violationsIn(root, ['domain', 'application', 'adapters', 'bootstrap']);
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

test.run();
