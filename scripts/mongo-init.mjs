// The compose stack's one-shot MongoDB set-up (the mongo-init service of compose.yaml, run with the service's own image
// and driver): waits for the server, initiates the one-node replica set unless it already is one, waits until the node
// is primary, then creates the application user, or brings its password and roles up to date. Idempotent: run at
// every `up`, it changes nothing that is already so. It needs no healthcheck to have run, and exits 0 when done, 1 with
// one line when it cannot be done within MONGO_INIT_TIMEOUT_MS. It never prints a password.
//
//   MONGO_HOST                 host:port of the server, and the replica set member's name (default mongo:27017)
//   MONGO_REPLICA_SET          the replica set's name (default rs0)
//   MONGO_ROOT_USERNAME        the user that may initiate and create users (default root; in the admin database)
//   MONGO_ROOT_PASSWORD_FILE   the file that holds its password (the mongo service's MONGO_INITDB_ROOT_PASSWORD_FILE)
//   MONGODB_URI_FILE           the service's own MONGODB_URI: the user, password and authentication database it names
//                              are the ones created here
//   MONGODB_DB                 the database the user may read and write, and no other (default plantstore)
//   MONGO_INIT_TIMEOUT_MS      how long to wait for the server and its election (default 120000)
import { readFileSync } from 'node:fs';
import { MongoClient, MongoServerError } from 'mongodb';

const env = (name, fallback) => {
  const value = process.env[name];
  return value === undefined || value === '' ? fallback : value;
};
const fail = (line) => {
  process.stderr.write(`mongo-init: ${line}\n`);
  process.exit(1);
};
const say = (line) => process.stdout.write(`mongo-init: ${line}\n`);
const secret = (variable) => {
  const path = env(variable);
  if (path === undefined) fail(`${variable} is not set`);
  try {
    return readFileSync(path, 'utf8').replace(/(\r?\n)+$/, '');
  } catch (e) {
    return fail(`${variable}: cannot read ${JSON.stringify(path)} (${e.code ?? e.message})`);
  }
};

const host = env('MONGO_HOST', 'mongo:27017');
const replicaSet = env('MONGO_REPLICA_SET', 'rs0');
const rootUser = env('MONGO_ROOT_USERNAME', 'root');
const rootPassword = secret('MONGO_ROOT_PASSWORD_FILE');
const db = env('MONGODB_DB', 'plantstore');
const timeoutMs = Number(env('MONGO_INIT_TIMEOUT_MS', '120000'));
const deadline = Date.now() + timeoutMs;

// The application's user, as the service will log in: a single-host URI, so the WHATWG URL parser reads it.
let app;
try {
  app = new URL(secret('MONGODB_URI_FILE'));
} catch {
  fail('MONGODB_URI_FILE: the file does not hold a mongodb://user:password@host/db URI');
}
const appUser = decodeURIComponent(app.username);
const appPassword = decodeURIComponent(app.password);
const authDb = app.searchParams.get('authSource') ?? (app.pathname.slice(1) || 'admin');
if (appUser === '' || appPassword === '') fail('MONGODB_URI_FILE: the URI names no user and password');

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
/** `attempt` until it returns something other than undefined, or fail with `what` at the deadline. */
const until = async (what, attempt) => {
  let last = 'no answer yet';
  for (;;) {
    try {
      const result = await attempt();
      if (result !== undefined) return result;
    } catch (e) {
      // Refused, not yet started, still in the image's first-start set-up (it listens on loopback only then), or
      // electing: all worth another try until the deadline. Wrong root credentials are not.
      if (e instanceof MongoServerError && e.code === 18) fail(`${rootUser}: authentication failed (${e.message})`);
      last = e instanceof Error ? e.message : String(e);
    }
    if (Date.now() > deadline) fail(`${what} not done within ${timeoutMs} ms: ${last}`);
    await sleep(500);
  }
};

const client = new MongoClient(`mongodb://${host}/?directConnection=true&authSource=admin`, {
  auth: { username: rootUser, password: rootPassword },
  serverSelectionTimeoutMS: 2000,
  connectTimeoutMS: 2000,
});
try {
  const admin = client.db('admin');
  const hello = await until(`reaching ${host}`, () => admin.command({ hello: 1 }));
  if (hello.setName === undefined) {
    try {
      await admin.command({ replSetInitiate: { _id: replicaSet, members: [{ _id: 0, host }] } });
      say(`replica set ${replicaSet} initiated with ${host}`);
    } catch (e) {
      if (!(e instanceof MongoServerError && e.code === 23)) throw e; // 23: AlreadyInitialized (a concurrent run)
    }
  } else if (hello.setName !== replicaSet) {
    fail(`${host} is a member of replica set ${hello.setName}, not ${replicaSet}`);
  } else say(`replica set ${replicaSet} already initiated`);
  await until(`${host} becoming primary`, async () =>
    (await admin.command({ hello: 1 })).isWritablePrimary === true ? true : undefined,
  );

  const users = client.db(authDb);
  const roles = [{ role: 'readWrite', db }];
  const exists = (await users.command({ usersInfo: appUser })).users.length > 0;
  const command = exists ? 'updateUser' : 'createUser';
  try {
    await users.command({ [command]: appUser, pwd: appPassword, roles });
    say(`${command}: ${appUser} (in ${authDb}) may read and write ${db}, and nothing else`);
  } catch (e) {
    // 238 NotImplemented: a server without roles (FerretDB 1.x gives every authenticated user every database).
    if (!(e instanceof MongoServerError && e.code === 238)) throw e;
    await users.command({ [command]: appUser, pwd: appPassword, ...(exists ? {} : { roles: [] }) });
    say(
      `${command}: ${appUser} (in ${authDb}); WARNING: this server has no roles, so the user is not limited to ${db}`,
    );
  }
} catch (e) {
  fail(e instanceof Error ? e.message : String(e));
} finally {
  await client.close();
}
