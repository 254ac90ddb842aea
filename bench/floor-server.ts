/**
 * The floor: a bare node:http server doing the least the benchmarked job needs (token lookup, JSON parse, an
 * in-memory map, a JSON response) and nothing else: no validation, no logging, no paging cursor. Any Node service
 * doing this job is at most this fast; the benchmark reports the service as a ratio of it.
 */
import { createServer } from 'node:http';

const port = Number(process.argv[2]);
const token = process.argv[3] ?? 'bench-token';
const owners = new Map<string, Map<string, { name: string; tag?: string }>>();
const tokens = new Map([[token, 'bench']]);

const server = createServer((req, res) => {
  const owner = tokens.get((req.headers.authorization ?? '').slice(7));
  if (owner === undefined) {
    res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":401,"message":"unauthorized"}');
    return;
  }
  let plants = owners.get(owner);
  if (plants === undefined) owners.set(owner, (plants = new Map<string, { name: string; tag?: string }>()));
  if (req.method === 'GET') {
    const limit = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('limit') ?? 100);
    const page: Array<{ name: string; tag?: string }> = [];
    for (const plant of plants.values()) {
      if (page.length === limit) break;
      page.push(plant);
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(page));
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString()) as { id: number; name: string; tag?: string };
    const plant = body.tag === undefined ? { name: body.name } : { name: body.name, tag: body.tag };
    plants.set(String(body.id), plant);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(plant));
  });
});
server.listen(port, '127.0.0.1', () => process.stdout.write('listening\n'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
