// Resume tokens on their own (src/realtime/log/resume-token.ts): what is signed comes back, a
// token another key signed or that was changed does not, an oversized one is not handed out, and
// a client's position is read strictly.
import t from 'tap'
import {
  MAX_TOKEN,
  readPosition,
  readToken,
  signToken,
  type ResumePoint
} from '../../../src/realtime/log/resume-token.ts'

const POINT: ResumePoint = {
  epoch: 'e1',
  position: 42,
  issued: 1_700_000_000_000,
  url: '/user?where={"a":1}',
  records: { user: [1, 'x'], pet: [] },
  watched: 'user'
}

t.test('a token gives back what was signed, with the key that signed it only', async t => {
  const token = signToken(POINT, 'key') as string
  t.same(readToken(token, 'key'), POINT)
  t.same(readToken(signToken({ ...POINT, watched: undefined }, 'key') as string, 'key'), {
    ...POINT,
    watched: undefined
  }, 'no watched model')
  t.equal(readToken(token, 'another key'), undefined, 'another key')
  const [payload, signature] = token.split('.')
  t.equal(readToken(`${payload}A.${signature}`, 'key'), undefined, 'a changed payload')
  t.equal(readToken(`${payload}.${signature.slice(1)}`, 'key'), undefined, 'a signature of another length')
  t.equal(readToken(payload, 'key'), undefined, 'no signature')
  t.equal(readToken(`${'a'.repeat(MAX_TOKEN)}.${signature}`, 'key'), undefined, 'too long')
  const many = { ...POINT, records: { user: Array.from({ length: 2000 }, (_, i) => i) } }
  t.equal(signToken(many, 'key'), undefined, 'a read of too many records gets no token')
})

t.test('a client position is <epoch>:<digits>', async t => {
  t.same(readPosition('e1:42'), { epoch: 'e1', position: 42 })
  t.same(readPosition('a:b:7'), { epoch: 'a:b', position: 7 }, 'the last colon separates')
  for (
    const bad of [undefined, 42, '', '42', ':42', 'e1:', 'e1:-1', 'e1:1.5', 'e1:1e3', 'e1: 4', `e1:${'9'.repeat(20)}`]
  ) {
    t.equal(readPosition(bad), undefined, JSON.stringify(bad))
  }
})
