import { spawn } from 'node:child_process';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { ServerLimits } from '../../adapters/http/server/server.js';
import { memoryPlantRepository } from '../../adapters/storage/memory/memory-plant-repository.js';
import { aPlant, right } from '../support/fixtures.js';
import { startService } from '../support/http.js';
import { eventually, within } from '../support/wait.js';

/**
 * The unsent-bytes bound closes the clients that do not read and never one that does, on a real network's segment
 * sizes. On loopback's (64 KiB segments, megabytes of socket buffers) the kernel takes a 1.7 MB response at once and
 * nothing is ever unsent, so the clients here are a Python process (Node cannot set TCP_MAXSEG) whose sockets
 * advertise a 536-byte MSS and a 4 KiB receive buffer, as a slow real link would: one reads steadily at 400 kB/s,
 * and half a second later 45 others ask for the same large file and never read.
 */
const test = suite('edge: the unsent-bytes bound spares clients that read');

const ASSET = '/docs/swagger-ui-bundle.js';

const CLIENTS = String.raw`
import json, socket, sys, time
port, path, rate, others, delay, fields = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), sys.argv[6]

def open_conn():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 536)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(('127.0.0.1', port))
    s.sendall(('GET %s HTTP/1.1\r\nHost: x\r\n%s\r\n' % (path, fields)).encode())
    return s

reader = open_conn()
reader.settimeout(0.01)
start = time.monotonic()
idle = []
received = b''
head = None
length = None
end = 'complete'
while True:
    now = time.monotonic()
    if not idle and others and now - start >= delay:
        idle = [open_conn() for _ in range(others)]
    if len(received) > rate * (now - start):
        time.sleep(0.002)
        continue
    try:
        chunk = reader.recv(4096)
    except socket.timeout:
        continue
    except OSError as e:
        end = repr(e)
        break
    if not chunk:
        end = 'closed'
        break
    received += chunk
    if head is None and b'\r\n\r\n' in received:
        head, _, _ = received.partition(b'\r\n\r\n')
        for line in head.split(b'\r\n')[1:]:
            name, _, value = line.partition(b':')
            if name.strip().lower() == b'content-length':
                length = int(value)
    if head is not None and length is not None and len(received) >= len(head) + 4 + length:
        break
body = 0 if head is None else len(received) - len(head) - 4
print(json.dumps({
    'status': None if head is None else int(head.split(b' ')[1]),
    'length': length,
    'body': body,
    'seconds': round(time.monotonic() - start, 2),
    'end': end,
    'idle': [s.getsockname()[1] for s in idle],
}), flush=True)
sys.stdin.read()
`;

interface Outcome {
  readonly status: number | null;
  readonly length: number | null;
  readonly body: number;
  readonly seconds: number;
  /** How the reader's connection ended: complete, closed (by the server), or the error. */
  readonly end: string;
  /** The local ports of the clients that never read, still open on the client's side. */
  readonly idle: number[];
}

/**
 * Runs the reader and the idle clients (45, half a second later, asking for the large file unless told otherwise);
 * `check` runs while the idle clients are still open.
 */
const withClients = async (
  port: number,
  check: (outcome: Outcome) => Promise<void>,
  { path = ASSET, others = 45, delay = 0.5, fields = '' } = {},
) => {
  const args = [String(port), path, '400000', String(others), String(delay), fields];
  const child = spawn('python3', ['-c', CLIENTS, ...args], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  try {
    const line = await within(
      60_000,
      'the reader to finish',
      new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          if (out.includes('\n')) resolve(out.slice(0, out.indexOf('\n')));
        });
        child.once('error', reject);
        child.once('exit', (code) => reject(new Error(`python3 exited ${code} before reporting`)));
      }),
    );
    await check(JSON.parse(line) as Outcome);
  } finally {
    child.stdin.end();
    child.kill();
  }
};

const service = (limits: Partial<ServerLimits>) => startService({}, limits);

test('at the defaults, a steady reader gets every byte of a large file while 45 connections that never read hold it too', async () => {
  const svc = await service({});
  try {
    await withClients(svc.port, async (outcome) => {
      assert.is(outcome.status, 200);
      assert.ok(outcome.length !== null && outcome.length > 1_000_000, `a large file: ${outcome.length}`);
      assert.is(outcome.body, outcome.length, `the reader got ${outcome.body} of ${outcome.length} bytes`);
      assert.is(outcome.idle.length, 45);
      // The 45 copies are one cached Buffer: they cost the process nothing, so the bound is not met.
      assert.not.ok(svc.logs().some((l) => l['code'] === 'UNSENT_LIMIT'));
    });
  } finally {
    await svc.close();
  }
});

test('past the bound, the connections that never read are all closed and the one that reads gets every byte', async () => {
  // Under the file's own size: the bound is exceeded while anyone holds it, so the 6 that never read begin one at a
  // time, after the reader, and each is closed in turn, stalled for unsentStallMs.
  const svc = await service({ maxUnsentBytes: 1024 * 1024, unsentStallMs: 1500 });
  try {
    await withClients(
      svc.port,
      async (outcome) => {
        assert.is(outcome.status, 200);
        assert.is(
          outcome.body,
          outcome.length,
          `the reader got ${outcome.body} of ${outcome.length} bytes (${outcome.seconds} s, ${outcome.end}); logged: ${JSON.stringify(svc.logs().filter((l) => l['code'] === 'UNSENT_LIMIT'))}`,
        );
        assert.ok(outcome.seconds > 1.5, `the reader was slow enough to matter (${outcome.seconds} s)`);
        await eventually(
          'every connection that never read closed by the server',
          () => outcome.idle.every((p) => !svc.holds(p)),
          { timeoutMs: 30_000 },
        );
        assert.ok(svc.logs().some((l) => l['code'] === 'UNSENT_LIMIT'));
      },
      { others: 6 },
    );
  } finally {
    await svc.close();
  }
});

test('past the bound, no further response is begun until the bytes held are back within it, but a probe is', async () => {
  // 20 clients at once ask for a page of 1000 of the largest plants (about 1.2 MB), under a bound of 2.5 pages: three
  // pages pass it, and each further page waits for bytes to leave. The pages held are at most those begun less those
  // whose connections the bound closed, and one more once the reader's page has left: at most 4.
  const memory = memoryPlantRepository();
  let [begun, most] = [0, 0];
  // A /healthz sent as the third page begins: it arrives with the bound full, and none is shed before 150 ms.
  let probe: Promise<string> | undefined;
  const closed = () => svc.logs().reduce((sum, l) => sum + (l['code'] === 'UNSENT_LIMIT' ? Number(l['closed']) : 0), 0);
  const plants = {
    ...memory,
    page: (...args: Parameters<typeof memory.page>) => {
      begun += 1;
      most = Math.max(most, begun - closed());
      if (begun === 3)
        probe = fetch(`${svc.base}/healthz`).then(
          async (r) => `${r.status} ${await r.text()}, ${begun} begun, ${closed()} closed`,
        );
      return memory.page(...args);
    },
  };
  const svc = await startService({ plants }, { maxUnsentBytes: 3_000_000, unsentStallMs: 1500 });
  try {
    const owner = svc.principal.alice.owner;
    for (let id = 1n; id <= 1000n; id++)
      await right(plants.insert(owner, aPlant(id, '🌿'.repeat(200), '🌿'.repeat(100)), 1000));
    const path = '/plants?limit=1000';
    await withClients(
      svc.port,
      async (outcome) => {
        assert.is(outcome.status, 200);
        assert.ok(outcome.length !== null && outcome.length > 1_000_000, `a large page: ${outcome.length}`);
        assert.is(outcome.body, outcome.length, `the reader got ${outcome.body} of ${outcome.length} bytes`);
        await eventually('every client got its page begun', () => begun === 21, { detail: () => `${begun} begun` });
        assert.ok(most <= 4, `${most} pages held at once (${begun} begun, ${closed()} closed)`);
        assert.match(
          (await probe) ?? '',
          /^200 .*, 3 begun, 0 closed$/,
          'the probe answered before any page began after it',
        );
        const open = () => outcome.idle.filter((p) => svc.holds(p)).length;
        await eventually('the connections that never read held within the bound (2 pages)', () => open() <= 2, {
          detail: () => `${open()} held`,
        });
      },
      { path, others: 20, delay: 0, fields: `Authorization: Bearer ${svc.token.alice}\r\n` },
    );
  } finally {
    await svc.close();
  }
});

test.run();
