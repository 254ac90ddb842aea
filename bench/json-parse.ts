/**
 * Cost of parsing one POST /plants body in process, beside lossless-json's parse (the parser before). Best of 5
 * batches; no network, no HTTP.
 */
import { parse as losslessParse } from 'lossless-json';
import { parseJson } from '../adapters/http/api/json.js';

/** A plant with ignored members (objects, numbers, strings, booleans) up to `bytes` long. */
const withIgnoredMembers = (bytes: number): string => {
  const notes: object[] = [];
  let text = '';
  for (let day = 0; ; day++) {
    notes.push({ day, text: `watered at ${day % 24}:00, leaves fine`, ok: true });
    const next = `{"id":9007199254740993,${JSON.stringify({ name: 'Fern', notes }).slice(1)}`;
    if (next.length > bytes) return text;
    text = next;
  }
};

const BODIES = {
  'a plant (75 B)': '{"id": 9007199254740993, "name": "Monstera deliciosa", "tag": "tropical"}',
  'a plant and ignored members (16 KiB)': withIgnoredMembers(16_384),
};

const usPerParse = (parse: (bytes: Buffer) => unknown, body: Buffer, budgetMs: number): number => {
  let reps = 1;
  for (;;) {
    const start = performance.now();
    for (let i = 0; i < reps; i++) parse(body);
    if (performance.now() - start >= budgetMs / 5 || reps >= 1 << 20) break;
    reps *= 2;
  }
  let best = Infinity;
  for (let trial = 0; trial < 5; trial++) {
    const start = performance.now();
    for (let i = 0; i < reps; i++) parse(body);
    best = Math.min(best, (performance.now() - start) / reps);
  }
  return best * 1000;
};

export const jsonParseCost = (smoke: boolean): void => {
  const budgetMs = smoke ? 10 : 200;
  const parsers: Array<[string, (bytes: Buffer) => unknown]> = [
    ['ours', parseJson],
    ['lossless-json (before)', (bytes) => losslessParse(bytes.toString('utf8'))],
  ];
  console.log(`\nJSON body parse cost per body, in process (best of 5; node ${process.version})`);
  for (const [label, text] of Object.entries(BODIES)) {
    const body = Buffer.from(text);
    const figures = parsers.map(([name, parse]) => `${name} ${usPerParse(parse, body, budgetMs).toFixed(2)} µs`);
    console.log(`  ${label.padEnd(40)} ${figures.join('  ')}`);
  }
};
