import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import { distRoot, runNode } from '../support/process.js';
import { redisBinary, sharedRedis } from '../../harness/servers.js';
import { suiteWith } from '../support/suites.js';

const binary = redisBinary();
const uri = async () => {
  if ('skip' in binary) throw new Error(binary.skip);
  return (await sharedRedis(binary.bin)).uri;
};
const { test, run } = suiteWith(
  'token CLI with AUTH=redis, end to end',
  'skip' in binary ? binary : async () => ({ uri: await uri() }),
);

const cli = async (args: string[], env: Record<string, string> = {}, input?: string) => {
  const run = runNode('bootstrap/token-cli.js', { AUTH: 'redis', REDIS_URL: await uri(), ...env }, args);
  if (input !== undefined) run.child.stdin.end(input);
  const code = await run.exited;
  return { code, stdout: run.stdout(), stderr: run.stderr() };
};

test('issue, use over HTTP, revoke, then 401 at the next request', async () => {
  const issued = await cli([
    'issue',
    '--owner',
    'acme',
    '--subject',
    'ci',
    '--scopes',
    'plants:read,plants:write',
    '--ttl',
    '3600',
  ]);
  assert.is(issued.code, 0, issued.stderr);
  const lines = issued.stdout.trimEnd().split('\n');
  const token = lines[lines.length - 1] as string;
  assert.match(token, /^[A-Za-z0-9_-]{43}$/);
  assert.match(
    issued.stderr,
    /issued a token for owner acme, subject ci, scopes plants:read plants:write, expires in 3600 s/,
  );

  const svc = runNode('bootstrap/main.js', {
    PORT: '0',
    HOST: '127.0.0.1',
    AUTH: 'redis',
    REDIS_URL: await uri(),
    TOKEN_CACHE_TTL_MS: '0',
  });
  try {
    await svc.waitFor(/"msg":"listening"/);
    const base = `http://127.0.0.1:${/"port":(\d+)/.exec(svc.stdout())?.[1]}`;
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    assert.is(
      (await fetch(`${base}/plants`, { method: 'POST', headers, body: '{"id": 1, "name": "Fern"}' })).status,
      200,
    );
    assert.is((await fetch(`${base}/readyz`)).status, 200);

    const revoked = await cli(['revoke', token]);
    assert.is(revoked.code, 0, revoked.stderr);
    assert.is(revoked.stdout, 'revoked\n');
    const after = await fetch(`${base}/plants`, { headers });
    assert.is(after.status, 401);
    assert.is(after.headers.get('www-authenticate'), 'Bearer realm="plants", error="invalid_token"');
    assert.not.ok(svc.stdout().includes(token), 'the token never reaches a log line');

    const again = await cli(['revoke', token]);
    assert.is(again.code, 1);
    assert.match(again.stdout, /^no such token/);
  } finally {
    svc.child.kill('SIGTERM');
    assert.is(await svc.exited, 0);
  }
});

test('four tokens of two owners: list by owner shows its own without secrets; revoke by owner and subject refuses exactly those on a running service', async () => {
  const run = Date.now().toString(36);
  const owners = [`a-${run}`, `b-${run}`];
  const issue = async (owner: string, subject: string) => {
    const issued = await cli([
      'issue',
      '--owner',
      owner,
      '--subject',
      subject,
      '--scopes',
      'plants:read',
      '--ttl',
      '600',
    ]);
    assert.is(issued.code, 0, issued.stderr);
    return { owner, subject, token: issued.stdout.trim() };
  };
  const tokens: Array<{ owner: string; subject: string; token: string }> = [];
  for (const owner of owners) for (const subject of ['ci', 'ops']) tokens.push(await issue(owner, subject));

  const listed = await cli(['list', '--owner', owners[0] as string]);
  assert.is(listed.code, 0, listed.stderr);
  const rows = listed.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { owner: string; subject: string; scopes: string[]; issued: string; expires: string });
  assert.equal(rows.map((r) => [r.owner, r.subject, r.scopes]).sort(), [
    [owners[0], 'ci', ['plants:read']],
    [owners[0], 'ops', ['plants:read']],
  ]);
  for (const r of rows) {
    const ttl = Date.parse(r.expires) - Date.parse(r.issued);
    assert.ok(Math.abs(ttl - 600_000) < 5_000, `expires 600 s after it was issued: ${r.issued} ${r.expires}`);
  }
  for (const { token } of tokens) assert.not.ok(listed.stdout.includes(token) || listed.stderr.includes(token));

  // The token cache is on (its default): revocation still reaches the running process at once.
  const svc = runNode('bootstrap/main.js', { PORT: '0', HOST: '127.0.0.1', AUTH: 'redis', REDIS_URL: await uri() });
  try {
    await svc.waitFor(/"msg":"listening"/);
    const base = `http://127.0.0.1:${/"port":(\d+)/.exec(svc.stdout())?.[1]}`;
    const statuses = () =>
      Promise.all(
        tokens.map(async ({ token }) => {
          const res = await fetch(`${base}/plants`, { headers: { authorization: `Bearer ${token}` } });
          await res.arrayBuffer();
          return res.status;
        }),
      );
    assert.equal(await statuses(), [200, 200, 200, 200]);
    const revoked = await cli(['revoke', '--owner', owners[0] as string, '--subject', 'ci']);
    assert.is(revoked.code, 0, revoked.stderr);
    assert.is(revoked.stdout, 'revoked 1\n');
    assert.equal(await statuses(), [401, 200, 200, 200]);
    assert.is((await cli(['revoke', '--owner', owners[1] as string])).stdout, 'revoked 2\n');
    assert.equal(await statuses(), [401, 200, 401, 401]);
  } finally {
    svc.child.kill('SIGTERM');
    assert.is(await svc.exited, 0);
  }
  const left = await cli(['list', '--owner', owners[0] as string, '--subject', 'ops']);
  assert.is(left.stdout.trim().split('\n').length, 1);
});

test('bad arguments print the usage line and exit 2', async () => {
  for (const args of [
    [],
    ['grant'],
    ['issue', '--owner', 'acme', '--subject', 'ci'],
    ['issue', '--owner', 'acme', '--subject', 'ci', '--scopes', 'plants:admin'],
    ['issue', '--owner', 'acme', '--subject', 'ci', '--scopes', 'plants:read', '--ttl', '0'],
    ['issue', '--owner', '', '--subject', 'ci', '--scopes', 'plants:read'],
    ['issue', '--owner', 'acme', '--subject', 'ci', '--scopes', 'plants:read', '--bogus', 'x'],
    ['revoke'],
    ['revoke', 'a', 'b'],
    ['revoke', '--bogus'],
    ['revoke', '--owner', 'acme', 'a-token'],
    ['revoke', '--subject', 'ci'],
  ]) {
    const run = await cli(args);
    assert.is(run.code, 2, args.join(' '));
    assert.match(
      run.stderr,
      /\nusage: AUTH=redis REDIS_URL=\S+ npm run --silent token -- <command>\n {2}issue --owner <owner>/,
      args.join(' '),
    );
    assert.is(run.stdout, '');
  }
});

test('a repeated option is a usage error (exit 2) and issues nothing', async () => {
  const base = ['issue', '--owner', 'alice', '--subject', 'ci', '--scopes', 'plants:read'];
  for (const [extra, name] of [
    [['--owner', 'bob'], 'owner'],
    [['--scopes', 'plants:write'], 'scopes'],
    [['--subject', 'cd'], 'subject'],
    [['--ttl', '60', '--ttl', '3600'], 'ttl'],
  ] as const) {
    const run = await cli([...base, ...extra]);
    assert.is(run.code, 2, extra.join(' '));
    assert.match(run.stderr, new RegExp(`^--${name} is given 2 times; give it once\\n`), extra.join(' '));
    assert.is(run.stdout, '', 'no token printed');
  }
});

test('--help prints the usage on stdout and exits 0, without needing Redis', async () => {
  for (const flag of [['--help'], ['-h'], ['help'], ['issue', '--help'], ['revoke', '--help'], ['revoke', '-h']]) {
    const run = runNode('bootstrap/token-cli.js', {}, flag);
    assert.is(await run.exited, 0, flag.join(' '));
    assert.is(run.stderr(), '');
    assert.match(run.stdout(), /^usage: AUTH=redis REDIS_URL=/);
    assert.match(run.stdout(), /without --ttl it never\s+expires/);
    assert.match(run.stdout(), /TOKEN=\$\(npm run --silent token -- issue/);
    assert.match(run.stdout(), /revoke -\s+revokes the token read from standard input/);
  }
});

test('`revoke -` revokes the token read from standard input', async () => {
  const issued = await cli(['issue', '--owner', 'acme', '--subject', 'stdin', '--scopes', 'plants:read']);
  assert.is(issued.code, 0, issued.stderr);
  assert.match(issued.stderr, /, no expiry, into Redis at 127\.0\.0\.1:\d+\/0\n$/);
  const token = issued.stdout.trimEnd().split('\n').pop() as string;
  const revoked = await cli(['revoke', '-'], {}, `${token}\n`);
  assert.is(revoked.code, 0, revoked.stderr);
  assert.is(revoked.stdout, 'revoked\n');
  const again = await cli(['revoke', '-'], {}, token);
  assert.is(again.code, 1, 'gone: no such token');
  const garbage = await cli(['revoke', '-'], {}, 'two\nlines\n');
  assert.is(garbage.code, 2);
  assert.match(garbage.stderr, /^revoke -: standard input must hold one token on one line\n/);
});

test('the command needs AUTH=redis: otherwise one config line and exit 1', async () => {
  const run = await cli(['issue', '--owner', 'acme', '--subject', 'ci', '--scopes', 'plants:read'], { AUTH: 'static' });
  assert.is(run.code, 1);
  assert.is(run.stderr, 'config: AUTH: the token command needs AUTH=redis (got static); for example AUTH=redis\n');
});

test('a REDIS_URL database the server does not have: exit 1 with the reason, and nothing issued in database 0', async () => {
  const { Redis } = await import('ioredis');
  const admin = new Redis(await uri());
  try {
    const before = (await admin.keys('plantstore:token:*')).length;
    const run = await cli(['issue', '--owner', 'acme', '--subject', 'db99', '--scopes', 'plants:read'], {
      REDIS_URL: `${await uri()}/99`,
      AUTH_TIMEOUT_MS: '500',
    });
    assert.is(run.code, 1, run.stdout);
    assert.is(run.stdout, '');
    assert.match(
      run.stderr,
      /^the token store \(Redis at 127\.0\.0\.1:\d+\/99\) did not answer \(ERR DB index is out of range\); nothing was issued\n$/,
    );
    assert.is((await admin.keys('plantstore:token:*')).length, before, 'no token written to database 0');
  } finally {
    admin.disconnect();
  }
});

test('a REDIS_URL with a malformed percent-escape: the CLI and the service each stop with one line naming it', async () => {
  const bad = { REDIS_URL: 'redis://:secret%zz@127.0.0.1:6379' };
  const line =
    'config: REDIS_URL: has a malformed percent-escape in its user name or password (write "%" as %25); for example REDIS_URL=redis://127.0.0.1:6379\n';
  const issued = await cli(['issue', '--owner', 'acme', '--subject', 'ci', '--scopes', 'plants:read'], bad);
  assert.is(issued.code, 1);
  assert.is(issued.stderr, line);
  const svc = runNode('bootstrap/main.js', { PORT: '0', HOST: '127.0.0.1', AUTH: 'redis', ...bad });
  assert.is(await svc.exited, 1);
  assert.is(svc.stderr(), line);
  assert.is(svc.stdout(), '', 'stopped before anything started');
});

test('REDIS_WAIT_REPLICAS=1 on a Redis without a replica: issue prints no token and keeps none, revoke exits 1 revoked', async () => {
  const listed = async () => (await cli(['list', '--owner', 'acme', '--subject', 'unreplicated'])).stdout;
  const before = await listed();
  const wait = { REDIS_WAIT_REPLICAS: '1', AUTH_TIMEOUT_MS: '400' };
  const issued = await cli(['issue', '--owner', 'acme', '--subject', 'unreplicated', '--scopes', 'plants:read'], wait);
  assert.is(issued.code, 1);
  assert.is(issued.stdout, '');
  assert.match(
    issued.stderr,
    /^nothing was issued: the token reached Redis at 127\.0\.0\.1:\d+\/0 but no replica took it in time, so it was withdrawn, not printed: 0 of the 1 replica\(s\) REDIS_WAIT_REPLICAS asks for acknowledged within 200 ms\n$/,
  );
  assert.is(await listed(), before, 'the withdrawn token is not listed');

  const token = (await cli(['issue', '--owner', 'acme', '--subject', 'unreplicated', '--scopes', 'plants:read']))
    .stdout;
  const revoked = await cli(['revoke', token.trimEnd()], wait);
  assert.is(revoked.code, 1);
  assert.match(revoked.stderr, /^revoked on Redis at 127\.0\.0\.1:\d+\/0 only, which a failover could undo; /);
  assert.is(await listed(), before, 'revoked on the primary');
});

test('--scopes takes commas or spaces: "plants:read plants:write" issues both scopes', async () => {
  for (const scopes of ['plants:read plants:write', 'plants:read, plants:write', 'plants:read,plants:write']) {
    const run = await cli(['issue', '--owner', 'acme', '--subject', 'spaces', '--scopes', scopes, '--ttl', '60']);
    assert.is(run.code, 0, run.stderr);
    assert.match(run.stderr, /scopes plants:read plants:write, expires in 60 s/, scopes);
  }
});

test('--scopes split by the shell (unquoted) is a usage error saying how to write the list', async () => {
  const run = await cli(['issue', '--owner', 'acme', '--subject', 'ci', '--scopes', 'plants:read', 'plants:write']);
  assert.is(run.code, 2);
  assert.match(
    run.stderr,
    /^unexpected argument "plants:write": --scopes takes one value; write plants:read,plants:write or quote the list \("plants:read plants:write"\)\n/,
  );
  assert.is(run.stdout, '', 'nothing issued');
});

test('issue and revoke name the Redis they write to (host:port/db), never its password', async () => {
  const { port } = new URL(await uri());
  const issued = await cli(['issue', '--owner', 'acme', '--subject', 'where', '--scopes', 'plants:read'], {
    REDIS_URL: `redis://127.0.0.1:${port}/3`,
  });
  assert.is(issued.code, 0, issued.stderr);
  assert.match(issued.stderr, new RegExp(`, into Redis at 127\\.0\\.0\\.1:${port}/3\\n$`));
  const token = issued.stdout.trimEnd();
  const revoked = await cli(['revoke', token], { REDIS_URL: `redis://127.0.0.1:${port}/3` });
  assert.is(revoked.code, 0, revoked.stderr);
  assert.is(revoked.stderr, `token store: Redis at 127.0.0.1:${port}/3\n`);
  const secret = await cli(['issue', '--owner', 'acme', '--subject', 'pw', '--scopes', 'plants:read'], {
    REDIS_URL: `redis://user:s3cret-pw@127.0.0.1:${port}/2`,
    AUTH_TIMEOUT_MS: '500',
  });
  assert.match(secret.stderr, new RegExp(`Redis at 127\\.0\\.0\\.1:${port}/2`));
  assert.not.match(secret.stderr, /s3cret-pw|user:/, 'no credentials in what it prints');
});

test('with REDIS_URL unset it says that it uses the default Redis, 127.0.0.1:6379/0', async () => {
  const run = runNode('bootstrap/token-cli.js', { AUTH: 'redis', AUTH_TIMEOUT_MS: '300' }, [
    'issue',
    '--owner',
    'acme',
    '--subject',
    'default',
    '--scopes',
    'plants:read',
    '--ttl',
    '1',
  ]);
  await run.exited; // 0 where a Redis listens on 6379, 1 where none does: either way it names where it wrote
  assert.match(run.stderr(), /Redis at 127\.0\.0\.1:6379\/0, the default: REDIS_URL is unset[)\n]/);
});

test('a token that starts with "-" is revoked after --, never taken for an option', async () => {
  const run = await cli(['revoke', '--', '-not-issued-token']);
  assert.is(run.code, 1, run.stderr);
  assert.is(run.stdout, 'no such token (never issued, expired or already revoked)\n');
});

test('`TOKEN=$(npm run --silent token -- issue ...)` captures the token and nothing else', async () => {
  const run = spawnSync(
    'npm',
    ['run', '--silent', 'token', '--', 'issue', '--owner', 'acme', '--subject', 'npm', '--scopes', 'plants:read'],
    {
      cwd: join(distRoot, '..'),
      env: { ...process.env, AUTH: 'redis', REDIS_URL: await uri() },
      encoding: 'utf8',
    },
  );
  assert.is(run.status, 0, run.stderr);
  assert.match(run.stdout, /^[A-Za-z0-9_-]{43}\n$/, 'stdout is the token alone ($(...) drops the line ending)');
  assert.match(run.stderr, /^issued a token for owner acme/m, 'the summary goes to stderr');
});

run();
