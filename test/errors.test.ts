// docs/errors.md and src/errors.ts list the same codes with the same statuses.
import t from 'tap'
import { readFile } from 'node:fs/promises'
import { errors } from '../src/errors.ts'
import { didYouMean } from '../src/did-you-mean.ts'

t.test('every code is documented, and every documented code exists', async t => {
  const doc = await readFile(new URL('../docs/errors.md', import.meta.url), 'utf8')
  const documented = new Map<string, number>()
  for (const match of doc.matchAll(/^### (BP_ERR_\w+)\n\n(\d{3})\./gm)) documented.set(match[1], Number(match[2]))
  const coded = new Map(Object.entries(errors).map(([key, E]) => [key, new E('a', 'b', 'c', 'd').statusCode as number]))
  t.same([...documented.keys()].sort(), [...coded.keys()].sort())
  for (const [code, status] of coded) t.equal(documented.get(code), status, `${code} is ${status} in the docs`)
  for (const [key, E] of Object.entries(errors)) {
    t.equal(new E('a', 'b', 'c', 'd').code, key, `${key} carries its own code`)
  }
})

t.test('didYouMean', async t => {
  t.equal(didYouMean('nmae', ['name', 'age']), ' (did you mean `name`?)')
  t.equal(didYouMean('NAME', ['name']), ' (did you mean `name`?)')
  t.equal(didYouMean('zzzzzz', ['name', 'age']), '')
})
