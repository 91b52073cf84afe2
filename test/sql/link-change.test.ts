// The order of the keys a link write removes (src/sql/write/link-change.ts `ascending`): numbers by
// value, texts by code point — the order PostgreSQL's "C" collation gives the same texts, which
// the change log's row is written in (src/sql/postgres/postgres-links.ts). JavaScript's own
// comparison of strings (UTF-16 units) differs from it for characters past U+FFFF.
import t from 'tap'
import fc from 'fast-check'
import { ascending } from '../../src/sql/write/link-change.ts'

/** The reference: code points compared one by one, a prefix first. */
function byCodePoints (a: string, b: string): number {
  const x = [...a].map(c => c.codePointAt(0) as number)
  const y = [...b].map(c => c.codePointAt(0) as number)
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i]
  return x.length - y.length
}

t.test('texts: code-point order, where UTF-16 order differs too', async t => {
  // U+FB00 is below U+1F600 as a code point, above its first UTF-16 unit (U+D83D).
  t.same(['\u{1F600}', '\uFB00', 'Zed', 'a', 'Z'].sort(ascending), ['Z', 'Zed', 'a', '\uFB00', '\u{1F600}'])
  t.same(['\uFB00', '\u{1F600}'].sort(), ['\u{1F600}', '\uFB00'], 'JavaScript alone would put the emoji first')
  t.equal(ascending('vip', 'vip'), 0)
  // Collected, then asserted once: generated texts make poor assertion names.
  const disagreements: Array<[string, string]> = []
  fc.assert(
    fc.property(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'grapheme' }), (a, b) => {
      if (Math.sign(ascending(a, b)) !== Math.sign(byCodePoints(a, b))) disagreements.push([a, b])
    }),
    { numRuns: 500 }
  )
  t.same(disagreements, [], '500 generated pairs ordered by code point')
})

t.test('numbers by value', async t => {
  t.same([10, 9, -1, 100].sort(ascending), [-1, 9, 10, 100])
})
