import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { AcknowledgedModel } from './model.js';

/** The multi-process suite is only as strict as its model: these pin what the model calls a violation. */
const test = suite('the model of acknowledged writes');

const withPlants = () => {
  const m = new AcknowledgedModel();
  const [a, b] = [m.freshName(1), m.freshName(2)];
  m.created(1, a, 200, 1);
  m.created(2, b, 200, 2);
  return { m, a, b };
};

test('a settled plant missing from the final listing is lost', () => {
  const { m, a } = withPlants();
  assert.equal(m.final([a]), { lost: 1, settled: 2, open: 0 });
  assert.match(m.problems()[0] ?? '', /id 2 shows nothing/);
});

test('a plant whose delete was acknowledged must not come back, in a later list or the final one', () => {
  const { m, a, b } = withPlants();
  m.deleted(1, 204, 3);
  m.listed([a, b], m.listStarts(4));
  assert.match(m.problems()[0] ?? '', /listed p1\.1, gone before the list started/);
  m.final([a, b]);
  assert.match(m.problems()[1] ?? '', /id 1 shows p1\.1, model allows absent/);
});

test('a plant listed twice, or out of id order, is a violation', () => {
  const { m, a, b } = withPlants();
  m.listed([a, b, b], m.listStarts(3));
  m.listed([b, a], m.listStarts(4));
  assert.is(m.problems().length, 2);
});

test('a settled plant untouched during a list must be in it; one touched meanwhile need not', () => {
  const { m, b } = withPlants();
  const check = m.listStarts(3);
  m.begin(1);
  m.deleted(1, 204, 4);
  m.end(1);
  m.listed([b], check);
  assert.equal(m.problems(), []);
  m.listed([], m.listStarts(5));
  assert.match(m.problems()[0] ?? '', /acknowledged p2\.2 missing from a list: lost/);
});

test('a 503 leaves both outcomes open: a create may have landed, a delete may have removed', () => {
  const m = new AcknowledgedModel();
  const a = m.freshName(1);
  m.created(1, a, 503, 1);
  assert.equal(m.final([a]), { lost: 0, settled: 0, open: 1 });
  const n = new AcknowledgedModel();
  const b = n.freshName(1);
  n.created(1, b, 200, 1);
  n.deleted(1, 503, 2);
  assert.equal(n.final([]), { lost: 0, settled: 0, open: 1 });
  assert.equal([...m.problems(), ...n.problems()], []);
});

test('answers that contradict an acknowledged state are violations: 200 over a stored plant, 404 for one', () => {
  const { m } = withPlants();
  m.created(1, m.freshName(1), 200, 3);
  m.deleted(2, 404, 4);
  assert.is(m.problems().length, 2);
});

test.run();
