import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import * as assert from 'uvu/assert';
import { serviceSuite } from '../support/http.js';
import { distRoot } from '../support/process.js';

/**
 * The served GET /openapi.json, linted as an integrator would: Redocly CLI (`recommended`, redocly.yaml) and Spectral
 * (`spectral:oas`, .spectral.yaml). No error and no warning: a rule that does not fit is turned off in the config
 * with its reason, not ignored here.
 */
const repo = join(distRoot, '..');
const binOf = (pkg: string, bin: string) => {
  const manifest = createRequire(import.meta.url).resolve(`${pkg}/package.json`);
  const bins = (createRequire(import.meta.url)(manifest) as { bin: Record<string, string> }).bin;
  return join(dirname(manifest), bins[bin] as string);
};
const run = promisify(execFile);
const lint = async (bin: string, args: string[]) => {
  const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' };
  // Both exit non-zero on an error; the JSON report on stdout says which, so read it either way.
  const { stdout } = await run(process.execPath, [bin, ...args], { cwd: repo, env, timeout: 60_000 }).catch(
    (e: { stdout?: string; stderr?: string }) => ({ stdout: e.stdout ?? '', stderr: e.stderr }),
  );
  return stdout;
};

const lintSuite = serviceSuite('the served OpenAPI document, linted');

const served = async (base: string) => {
  const dir = mkdtempSync(join(tmpdir(), 'openapi-lint-'));
  const file = join(dir, 'openapi.json');
  writeFileSync(file, await (await fetch(`${base}/openapi.json`)).text());
  return { file, done: () => rmSync(dir, { recursive: true, force: true }) };
};

lintSuite.test('Redocly CLI (recommended) finds no error and no warning', async ({ svc }) => {
  const doc = await served(svc.base);
  try {
    const out = await lint(binOf('@redocly/cli', 'redocly'), [
      'lint',
      '--config',
      'redocly.yaml',
      '--format',
      'json',
      doc.file,
    ]);
    const report = JSON.parse(out) as { totals: { errors: number; warnings: number }; problems: unknown[] };
    assert.equal(report.problems, [], JSON.stringify(report.problems, null, 2));
    assert.equal(report.totals, { ...report.totals, errors: 0, warnings: 0 });
  } finally {
    doc.done();
  }
});

lintSuite.test('Spectral (spectral:oas) finds no error and no warning', async ({ svc }) => {
  const doc = await served(svc.base);
  try {
    const out = await lint(binOf('@stoplight/spectral-cli', 'spectral'), [
      'lint',
      '--ruleset',
      '.spectral.yaml',
      '--format',
      'json',
      '--quiet',
      doc.file,
    ]);
    const problems = JSON.parse(out === '' ? '[]' : out) as Array<{ code: string; message: string; path: string[] }>;
    assert.equal(
      problems.map((p) => `${p.code} at ${p.path.join('.')}: ${p.message}`),
      [],
    );
  } finally {
    doc.done();
  }
});

lintSuite.run();
