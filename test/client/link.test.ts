import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { nextLink } from '../../client/src/link.js';

const test = suite('the client reads the next link of a Link field (RFC 8288)');

test('the service’s own field', () => {
  assert.is(nextLink('</plants?limit=1&cursor=MTox>; rel="next"'), '/plants?limit=1&cursor=MTox');
});

test('no field, or no next relation among the links: none', () => {
  assert.is(nextLink(null), undefined);
  assert.is(nextLink(''), undefined);
  assert.is(nextLink('</a>; rel="prev", </b>; rel=first'), undefined);
  assert.is(nextLink('</a>; title="next"'), undefined, 'a parameter other than rel');
  assert.is(nextLink('</a>; rel="nextpage"'), undefined);
});

test('next among several links and relation types, quoted or not, in any case', () => {
  assert.is(nextLink('</p>; rel="prev", </n>; rel="next"'), '/n');
  assert.is(nextLink('</n>; rel="next last"'), '/n');
  assert.is(nextLink('</n>;rel=next'), '/n');
  assert.is(nextLink('</n> ; REL = "NEXT"'), '/n');
  assert.is(nextLink('<https://h.example/n?a=1,2>; rel=next'), 'https://h.example/n?a=1,2', 'a comma in the target');
});

test('parameters before rel, quoted commas and semicolons, escapes: read as parameters', () => {
  assert.is(nextLink('</p>; title="a, b; rel=next"; rel=prev, </n>; type=text/html; rel="next"'), '/n');
  assert.is(nextLink('</n>; title="say \\"hi\\""; rel="next"'), '/n');
  assert.is(nextLink("</n>; title*=UTF-8''%e2%82%ac; rel=next"), '/n');
});

test('only the first rel parameter of a link counts', () => {
  assert.is(nextLink('</a>; rel=prev; rel=next'), undefined);
});

test('a field that does not parse: none', () => {
  assert.is(nextLink('/plants?cursor=x; rel="next"'), undefined, 'no angle brackets');
  assert.is(nextLink('</n; rel="next"'), undefined, 'unclosed');
  assert.is(nextLink('</a>; rel="prev" junk, </n>; rel="next"'), undefined);
});

test.run();
