// fast-check arbitraries for test/adversarial/fuzz.test.ts: URLs, `where` documents, find parameters,
// write bodies and websocket frames for the fixture models (test/fixtures/entities.ts): valid
// ones (for the PostgreSQL ⇄ SQLite differential and the reference reading of
// test/helpers/fuzz-oracle.ts), ones just off valid, and garbage (for the never-a-5xx
// properties). Everything here describes the fixture and the documentation; nothing reads src/.
import fc from 'fast-check'
import { PETS, TAGS, USERS } from '../fixtures/seed.ts'

export type ModelName = 'user' | 'pet' | 'tag'
type Kind = 'int' | 'string' | 'boolean' | 'date' | 'json'

interface Field {
  readonly name: string
  readonly kind: Kind
  readonly nullable: boolean
  /** For a singular association: the model it points at (its value is that model's key). */
  readonly target?: ModelName
}

interface ModelSpec {
  readonly pk: string
  readonly fields: readonly Field[]
  /** Collection name → child model. */
  readonly collections: Readonly<Record<string, ModelName>>
}

/** The fixture models as the routes see them (hidden `password` is not a field). */
export const MODELS: Readonly<Record<ModelName, ModelSpec>> = {
  user: {
    pk: 'id',
    fields: [
      { name: 'id', kind: 'int', nullable: false },
      { name: 'name', kind: 'string', nullable: false },
      { name: 'age', kind: 'int', nullable: true },
      { name: 'active', kind: 'boolean', nullable: false },
      { name: 'born', kind: 'date', nullable: true },
      { name: 'meta', kind: 'json', nullable: true },
      { name: 'bestPet', kind: 'int', nullable: true, target: 'pet' }
    ],
    collections: { pets: 'pet', friends: 'user', tags: 'tag' }
  },
  pet: {
    pk: 'id',
    fields: [
      { name: 'id', kind: 'int', nullable: false },
      { name: 'name', kind: 'string', nullable: false },
      { name: 'species', kind: 'string', nullable: false },
      { name: 'owner', kind: 'int', nullable: true, target: 'user' }
    ],
    collections: {}
  },
  tag: {
    pk: 'slug',
    fields: [
      { name: 'slug', kind: 'string', nullable: false },
      { name: 'label', kind: 'string', nullable: false },
      { name: 'weight', kind: 'int', nullable: false }
    ],
    collections: { users: 'user' }
  }
}

export const MODEL_NAMES: readonly ModelName[] = ['user', 'pet', 'tag']

const singulars = (model: ModelName): string[] =>
  MODELS[model].fields.filter(f => f.target !== undefined).map(f => f.name)
const collections = (model: ModelName): string[] => Object.keys(MODELS[model].collections)
const associations = (model: ModelName): string[] => [...singulars(model), ...collections(model)]
const fieldNames = (model: ModelName): string[] => MODELS[model].fields.map(f => f.name)

/** Every name any model has (so that one model's name is garbage for another). */
const ALL_NAMES = [...new Set(MODEL_NAMES.flatMap(m => [...fieldNames(m), ...collections(m)]))]

// ---------------------------------------------------------------------------------------------
// Objects with arbitrary keys. `{ __proto__: x }` in a literal sets the prototype; these helpers
// define own, enumerable properties, so that JSON.stringify writes every key that was generated.

/** An object with exactly these own keys (the last value of a repeated key wins). */
export function objectOf (entries: ReadonlyArray<readonly [string, unknown]>): Record<string, unknown> {
  const object: Record<string, unknown> = {}
  for (const [key, value] of entries) {
    Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true })
  }
  return object
}

const entriesToObject = <T>(arb: fc.Arbitrary<Array<readonly [string, T]>>): fc.Arbitrary<Record<string, unknown>> =>
  arb.map(objectOf)

// ---------------------------------------------------------------------------------------------
// Texts.

const SEED_STRINGS = [
  ...USERS.map(u => u.name),
  ...PETS.map(p => p.name),
  ...PETS.map(p => p.species),
  ...TAGS.map(t => t.slug),
  ...TAGS.map(t => t.label)
]
const FRAGMENTS = [
  'a',
  'A',
  'al',
  'li',
  'ce',
  'b',
  'B',
  'o',
  'e',
  'x',
  'Z',
  '_',
  '%',
  '\\',
  '*',
  '?',
  '[',
  ']',
  '[c]',
  '50',
  '0',
  'é',
  'É',
  'Émile',
  'ß',
  'ẞ',
  'İ',
  'ı',
  'ǅ',
  '😀',
  '\u0301',
  ' ',
  '  ',
  "'",
  '"',
  '`',
  ';',
  '\t',
  '\n',
  '\u00a0',
  '\u200b',
  '\ufeff',
  '\uffff',
  '\u{10ffff}',
  'ℌ',
  '一',
  ...SEED_STRINGS
]

/** Well-formed texts without NUL: names from the seed, their pieces, pattern characters, any Unicode. */
export const text: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...SEED_STRINGS) },
  {
    weight: 4,
    arbitrary: fc.array(fc.constantFrom(...FRAGMENTS), { minLength: 1, maxLength: 3 }).map(parts => parts.join(''))
  },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 6 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 6 }).map(s => s.replaceAll('\u0000', '')) }
)

/** A substring of a seed name: a pattern value that often matches. */
const seedPiece: fc.Arbitrary<string> = fc.tuple(fc.constantFrom(...SEED_STRINGS), fc.nat(), fc.nat()).map(
  ([s, a, b]) => {
    const chars = [...s]
    const from = a % (chars.length + 1)
    return chars.slice(from, from + (b % (chars.length - from + 1))).join('')
  }
)

/** Texts the database or the encoding cannot take, and edge lengths. */
export const badText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '\u0000',
    'a\u0000b',
    '\u0000\u0000',
    '\ud800',
    '\udfff',
    'x\ud800',
    '\udfffx',
    'a\udc00\ud800b',
    '\ud83d',
    '😀\ud800',
    '',
    ' ',
    'NaN',
    'Infinity',
    '-Infinity',
    '1e309',
    '-1e309',
    '0x10',
    '0b1',
    '0o7',
    '1_000',
    '١٢',
    '１２',
    ' 1',
    '1 ',
    '+1',
    '-0',
    '1.',
    '.5',
    '1e',
    'e1',
    '--1',
    'true ',
    'TRUE',
    'null',
    'undefined',
    '[]',
    '{}',
    '%',
    '%%',
    '%00',
    '%C3%28',
    '\\',
    '\\\\',
    '99999-01-01',
    '0000-12-31',
    '0001-01-01',
    '9999-12-31T23:59:59.999Z',
    '10000-01-01',
    '2024-13-01',
    '2024-02-30',
    '1990-01-01T25:00:00Z',
    '+001990-01-01',
    '1990-01-01T00:00:00+99:99',
    '1990-01-01T00:00:00.1234567Z',
    '1990-01-01 00:00',
    '-000001-01-01T00:00:00Z',
    '9223372036854775807',
    '9223372036854775808',
    '-9223372036854775809',
    '2147483648',
    '-2147483649',
    '9007199254740993',
    '1' + '0'.repeat(400)
  ),
  fc.constantFrom(255, 256, 257, 1000, 5000, 70000).chain(n =>
    fc.constantFrom('x', 'é', '😀', '\u0000').map(c => c.repeat(n))
  ),
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.string({ unit: fc.constantFrom('\ud800', '\udc00', 'a', '\u0000', '%', '\\', '"', '😀'), maxLength: 8 })
)

// ---------------------------------------------------------------------------------------------
// Values, by kind: valid ones (coercible, in range) and garbage.

const SEED_DATES = ['1990-01-01T00:00:00.000Z', '1985-06-15T12:00:00.250Z', '2000-02-29T00:00:00.000Z']
const MIN_DATE = new Date('0001-01-01T00:00:00.000Z')
const MAX_DATE = new Date('9999-12-31T23:59:59.999Z')

const validInt: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(22, 25, 30, 35, 40, 50, 60, 0, 5, 7, 10) },
  { weight: 4, arbitrary: fc.integer({ min: -3, max: 65 }) },
  { weight: 2, arbitrary: fc.integer({ min: -3, max: 65 }).map(String) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      29.5,
      30.0001,
      -0.5,
      24.999,
      '30.5',
      '1e1',
      '3E1',
      '-1.5',
      '+25',
      '.5',
      '25.',
      true,
      false
    )
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      2147483647,
      2147483648,
      -2147483648,
      -2147483649,
      4294967296,
      9007199254740991,
      -9007199254740991,
      1e15,
      '2147483648',
      '9007199254740991'
    )
  }
)

const validBool: fc.Arbitrary<unknown> = fc.constantFrom(true, false, 'true', 'false', 1, 0, '1', '0')

const validDate: fc.Arbitrary<unknown> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      ...SEED_DATES,
      '1990-01-01',
      '2000-02-29',
      '1990-01-01T05:00:00+05:00',
      '1985-06-15T12:00:00.25Z',
      '1985-06-15 12:00:00.250Z',
      '1989-12-31T23:59:59.999Z'
    )
  },
  { weight: 2, arbitrary: fc.constantFrom(...SEED_DATES).map(d => Date.parse(d)) },
  { weight: 1, arbitrary: fc.constantFrom(...SEED_DATES).map(d => String(Date.parse(d))) },
  { weight: 2, arbitrary: fc.date({ min: MIN_DATE, max: MAX_DATE, noInvalidDate: true }).map(d => d.toISOString()) },
  { weight: 1, arbitrary: fc.constantFrom('0001-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z', 0, -1, '1970-01-01') }
)

const validString: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...SEED_STRINGS) },
  { weight: 4, arbitrary: text },
  { weight: 2, arbitrary: seedPiece },
  { weight: 1, arbitrary: fc.constantFrom(5, 50, 0, -1.5, true, false) }
)

const userId: fc.Arbitrary<unknown> = fc.oneof({ weight: 4, arbitrary: fc.integer({ min: 1, max: 12 }) }, {
  weight: 1,
  arbitrary: fc.integer({ min: 1, max: 12 }).map(String)
})
const petId: fc.Arbitrary<unknown> = fc.oneof({ weight: 4, arbitrary: fc.integer({ min: 1, max: 7 }) }, {
  weight: 1,
  arbitrary: fc.integer({ min: 1, max: 7 }).map(String)
})
const tagSlug: fc.Arbitrary<unknown> = fc.oneof({ weight: 4, arbitrary: fc.constantFrom('admin', 'beta', 'vip') }, {
  weight: 1,
  arbitrary: text
})

function validValue (model: ModelName, field: Field): fc.Arbitrary<unknown> {
  if (field.target === 'pet') return petId
  if (field.target === 'user') return userId
  if (field.name === 'slug') return tagSlug
  if (field.name === 'id') return model === 'pet' ? petId : userId
  switch (field.kind) {
    case 'int':
      return validInt
    case 'boolean':
      return validBool
    case 'date':
      return validDate
    case 'string':
      return validString
    case 'json':
      return fc.constant(null)
  }
}

/** Any JSON-ish garbage value (objects with odd keys included). */
export const garbageValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: badText },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      null,
      true,
      false,
      0,
      -0,
      1e308,
      -1e308,
      5e-324,
      1.7976931348623157e308,
      2 ** 53 + 2,
      -(2 ** 63),
      2 ** 64,
      0.1 + 0.2,
      1e21,
      123456789.123456789
    )
  },
  { weight: 2, arbitrary: fc.oneof(validInt, validDate, validBool, validString) },
  { weight: 1, arbitrary: fc.double() },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
  {
    weight: 1,
    arbitrary: entriesToObject(
      fc.array(
        fc.tuple(
          fc.constantFrom('__proto__', 'constructor', 'toString', 'prototype', 'valueOf', '', 'in', '<'),
          fc.jsonValue({ maxDepth: 1 })
        ),
        { maxLength: 3 }
      )
    )
  }
)

// ---------------------------------------------------------------------------------------------
// `where`: valid documents (per model, for the differential) and garbage ones.

const COMPARE = ['<', '<=', '>', '>='] as const

/** Values just off each kind: texts that look like numbers, booleans or dates but are not quite. */
function nearValue (field: Field): fc.Arbitrary<unknown> {
  switch (field.kind) {
    case 'int':
      return fc.constantFrom(
        ' 1',
        '1 ',
        '+1',
        '.5',
        '5.',
        '1e3',
        '1E+2',
        '0x1A',
        '0b1',
        '1_0',
        '١',
        '１',
        '--1',
        '1-',
        'Infinity',
        'NaN',
        '',
        '1,5',
        '1.5e',
        'e5',
        '9007199254740993',
        9007199254740993,
        -9007199254740993,
        1e16,
        4.5e15 + 0.5,
        '-0',
        -0,
        'true',
        'null'
      )
    case 'boolean':
      return fc.constantFrom(
        'TRUE',
        'False',
        'yes',
        'no',
        'on',
        '1.0',
        '0.0',
        2,
        -1,
        1.5,
        '',
        ' true',
        'true ',
        't',
        'f',
        '01',
        null
      )
    case 'string':
      return badText
    case 'json':
      return fc.oneof(garbageValue, fc.constant({ '!=': 1 }))
    case 'date':
      return dateText
  }
}

/** Texts shaped like ISO 8601 dates, many of them not dates (no such day, hour, offset …). */
export const dateText: fc.Arbitrary<unknown> = fc.oneof(
  fc.tuple(
    fc.constantFrom(
      '1990',
      '2000',
      '2023',
      '2024',
      '0001',
      '0000',
      '9999',
      '1969',
      '10000',
      '+001990',
      '-000001',
      '199'
    ),
    fc.constantFrom('01', '02', '04', '12', '13', '00', '1'),
    fc.constantFrom('01', '28', '29', '30', '31', '32', '00', '1'),
    fc.constantFrom(
      '',
      'T00:00',
      'T00:00:00',
      'T12:30:00Z',
      'T23:59:59.999Z',
      'T24:00:00Z',
      'T23:59:60Z',
      'T25:00Z',
      'T10:61Z',
      'T10:00:00.1234Z',
      'T10:00:00+05:00',
      'T10:00:00+05',
      'T10:00:00+0500',
      'T10:00:00-14:00',
      'T10:00:00+99:00',
      ' 10:00:00Z',
      't10:00:00z',
      'T10:00:00.Z',
      'T::Z',
      'T1:00Z',
      'Z'
    )
  ).map(([y, m, d, time]) => `${y}-${m}-${d}${time}`),
  fc.constantFrom(
    '1990',
    '19900101',
    '1990-01',
    '1990-W01',
    '1990-001',
    'Jan 1 1990',
    '1990/01/01',
    '01/01/1990',
    'Mon, 01 Jan 1990 00:00:00 GMT',
    ' 1990-01-01',
    '1990-01-01 ',
    '1990-01-01T',
    'now',
    '',
    -62135596800001,
    253402300800000,
    8.64e15,
    -8.64e15 - 1,
    1e20,
    0.5,
    -0.5,
    '0',
    '-1',
    '1e3',
    true,
    null
  )
)

function validConstraint (model: ModelName, field: Field, near = false): fc.Arbitrary<unknown> {
  const value = near ? fc.oneof(validValue(model, field), nearValue(field)) : validValue(model, field)
  const list = fc.array(value, { maxLength: 5 })
  if (field.kind === 'json') return fc.constantFrom(null, { '!=': null })
  const options: Array<fc.Arbitrary<unknown>> = [
    value,
    value.map(v => ({ '!=': v })),
    list.map(values => ({ in: values })),
    list.map(values => ({ nin: values })),
    list.filter(values => values.length > 0).map(values => ({ '!=': values })),
    list.filter(values => values.length > 0),
    fc.constantFrom(null, { '!=': null })
  ]
  if (field.kind !== 'boolean') {
    options.push(fc.tuple(fc.constantFrom(...COMPARE), value).map(([op, v]) => objectOf([[op, v]])))
    options.push(
      fc.tuple(fc.constantFrom(...COMPARE), value, fc.constantFrom(...COMPARE), value).map(([a, x, b, y]) =>
        objectOf([[a, x], [b, y]])
      )
    )
  }
  if (field.kind === 'string') {
    const pattern = fc.oneof(seedPiece, text)
    options.push(
      fc.tuple(fc.constantFrom('contains', 'startsWith', 'endsWith'), pattern).map(([op, v]) => objectOf([[op, v]]))
    )
    options.push(
      fc.array(fc.oneof(seedPiece, fc.constantFrom('%', '_', '\\%', '\\_', '\\\\', '\\', '%%', '_%')), {
        minLength: 1,
        maxLength: 4
      })
        .map(parts => parts.join('')).filter(p => p !== '').map(like => ({ like }))
    )
  }
  return fc.oneof(...options)
}

/**
 * A valid `where` dictionary of a model, `and`/`or` nested up to `depth`, and relation filters
 * (docs/criteria.md#related-records) up to `related` associations deep.
 */
export function validWhere (
  model: ModelName,
  depth = 2,
  near = false,
  related = 2
): fc.Arbitrary<Record<string, unknown>> {
  const fields = MODELS[model].fields
  const leaf = fc.array(
    fc.constantFrom(...fields).chain(field => validConstraint(model, field, near).map(c => [field.name, c] as const)),
    { maxLength: 2 }
  )
    .map(objectOf)
  if (depth === 0) return leaf
  const inner = validWhere(model, depth - 1, near, related)
  const options: Array<fc.WeightedArbitrary<Record<string, unknown>>> = [
    { weight: 4, arbitrary: leaf },
    {
      weight: 2,
      arbitrary: fc.tuple(fc.constantFrom('and', 'or'), fc.array(inner, { maxLength: 3 }), leaf).map((
        [p, items, rest]
      ) => objectOf([...Object.entries(rest), [p, items]]))
    }
  ]
  const links = relations(model)
  if (related > 0 && links.length > 0) {
    const filter = fc.constantFrom(...links).chain(({ name, target, quantifiers }) =>
      fc.tuple(fc.constantFrom(...quantifiers), validWhere(target, depth - 1, near, related - 1)).map(([q, where]) =>
        [name, objectOf([[q, where]])] as const
      )
    )
    options.push({
      weight: 2,
      arbitrary: fc.tuple(filter, leaf).map(([[name, c], rest]) => objectOf([...Object.entries(rest), [name, c]]))
    })
  }
  return fc.oneof(...options)
}

/** The associations of a model a relation filter can follow, with their quantifiers. */
function relations (model: ModelName): Array<{ name: string, target: ModelName, quantifiers: string[] }> {
  return [
    ...Object.entries(MODELS[model].collections).map(([name, target]) => ({
      name,
      target,
      quantifiers: ['some', 'none', 'every']
    })),
    ...MODELS[model].fields.filter(f => f.target !== undefined).map(f => ({
      name: f.name,
      target: f.target as ModelName,
      quantifiers: ['is', 'isNot']
    }))
  ]
}

const MODIFIER_NAMES = [
  '<',
  '<=',
  '>',
  '>=',
  '!=',
  'in',
  'nin',
  'contains',
  'startsWith',
  'endsWith',
  'like',
  'lessThan',
  'lessThanOrEqual',
  'greaterThan',
  'greaterThanOrEqual',
  'not',
  '!',
  '!==',
  '<>',
  '==',
  '=',
  'IN',
  'Contains',
  'startswith',
  '$gt',
  '__proto__',
  'constructor',
  'toString',
  'valueOf',
  'hasOwnProperty',
  '',
  ' ',
  'like ',
  'and',
  'or',
  'ilike',
  'regex',
  'some',
  'none',
  'every',
  'is',
  'isNot',
  'any',
  'all',
  'Some'
]
const WHERE_KEYS = [
  ...ALL_NAMES,
  'password',
  'and',
  'or',
  'AND',
  'Or',
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
  'prototype',
  '',
  ' ',
  'name ',
  'NAME',
  'Name',
  'id ',
  'ID',
  'pets.name',
  'owner.name',
  'user_id',
  'best_pet_id',
  'owner_id',
  '"name"',
  'name;--'
]

/** Garbage `where` values: anything, long lists, deep nesting, unknown names and modifiers. */
export const garbageWhere: fc.Arbitrary<unknown> =
  fc.letrec<{ dict: Record<string, unknown>, value: unknown }>(tie => ({
    dict: entriesToObject(fc.array(fc.tuple(fc.constantFrom(...WHERE_KEYS), tie('value')), { maxLength: 4 })),
    value: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      { weight: 5, arbitrary: garbageValue },
      {
        weight: 3,
        arbitrary: entriesToObject(
          fc.array(
            fc.tuple(
              fc.constantFrom(...MODIFIER_NAMES),
              fc.oneof(garbageValue, fc.array(garbageValue, { maxLength: 4 }))
            ),
            { maxLength: 3 }
          )
        )
      },
      { weight: 2, arbitrary: fc.array(tie('dict'), { maxLength: 3 }) },
      { weight: 1, arbitrary: fc.array(garbageValue, { maxLength: 6 }) },
      { weight: 1, arbitrary: tie('dict') }
    )
  })).dict

/** Whole `where` documents as JSON text: valid, garbage, and texts JSON.stringify cannot write. */
export function whereText (model: ModelName): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 3, arbitrary: validWhere(model, 2).map(w => JSON.stringify(w)) },
    { weight: 3, arbitrary: validWhere(model, 2, true).map(w => JSON.stringify(w)) },
    { weight: 4, arbitrary: garbageWhere.map(w => JSON.stringify(w)) },
    { weight: 1, arbitrary: garbageValue.map(v => JSON.stringify(v) ?? 'null') },
    { weight: 1, arbitrary: fc.array(garbageValue, { maxLength: 5 }).map(v => JSON.stringify(v)) },
    { weight: 2, arbitrary: rawWhere },
    { weight: 1, arbitrary: deepWhere },
    { weight: 1, arbitrary: longList }
  )
}

const RAW_WHERE = [
  '{"age":1e309}',
  '{"age":-1e309}',
  '{"age":{"<":1e309}}',
  '{"id":1e400}',
  '1e309',
  '-1e309',
  '[1e309]',
  '{"age":{"in":[1,1e309]}}',
  '{"born":{">":1e309}}',
  '{"weight":1e309}',
  '{"name":1e309}',
  '{"name":{"contains":1e309}}',
  '{"owner":1e309}',
  '{"bestPet":{"!=":1e309}}',
  '{"name":"\\ud800"}',
  '{"name":"\\u0000"}',
  '{"name":{"like":"\\udfff%"}}',
  '"\\ud800"',
  '"\\u0000"',
  '{"\\ud800":1}',
  '{"name":{"\\u0000":1}}',
  '{"age":1,"age":"x"}',
  '{"or":[],"or":[{"age":1}]}',
  '{',
  '}',
  '{"age":}',
  '{"age":1,}',
  "{'age':1}",
  'NaN',
  'Infinity',
  'undefined',
  '',
  ' ',
  'null',
  'true',
  '"',
  '[',
  '{"age":01}',
  '{"age":+1}',
  '{"age":.5}',
  '{"age":0x10}',
  '{"a":1}x',
  '\u0000',
  '{"name":"a"\u0000}',
  '{"__proto__":{"age":1}}',
  '{"constructor":{"prototype":{"age":1}}}',
  '{"age":{"__proto__":{"<":1}}}',
  '{"or":{"0":{"age":1}}}',
  '{"and":"x"}',
  '{"or":[null]}',
  '{"or":[[]]}',
  '{"or":[1]}',
  '{"age":{}}',
  '{"name":{"like":""}}',
  '{"meta":{"plan":"pro"}}',
  '{"meta":{"!=":1}}',
  '{"meta":{"<":null}}',
  // relation filters: malformed, too deep, hostile texts inside
  '{"pets":{}}',
  '{"pets":{"some":null}}',
  '{"pets":{"some":[]}}',
  '{"pets":{"some":1}}',
  '{"pets":{"some":{},"any":{}}}',
  '{"pets":{"__proto__":{}}}',
  '{"pets":{"some":{"__proto__":{"name":"x"}}}}',
  '{"bestPet":{"is":{},"<":1}}',
  '{"bestPet":{"is":null}}',
  '{"bestPet":{"isNot":[1]}}',
  '{"owner":{"is":{"pets":{}}}}',
  '{"friends":{"some":{"friends":{"some":{"friends":{"some":{}}}}}}}',
  '{"friends":{"some":{"friends":{"some":{"friends":{"some":{"friends":{"some":{}}}}}}}}}',
  '{"pets":{"every":{"name":"x\u0027); DROP TABLE pet; --"}}}',
  '{"tags":{"some":{"slug":{"like":"%\u0027 OR 1=1 --"}}}}',
  '{"users":{"none":{"name":"\ud800"}}}',
  '{"owner":{"is":{"meta":{"plan":"pro"}}}}',
  '{"pets":{"some":{"owner":{"isNot":{"age":{"<":1e309}}}}}}'
]
const rawWhere: fc.Arbitrary<string> = fc.constantFrom(...RAW_WHERE)

/** Deeply nested `and`/`or`, arrays and objects (JSON.parse copes; the plugin must refuse). */
const deepWhere: fc.Arbitrary<string> = fc.tuple(
  fc.constantFrom(15, 16, 17, 18, 40, 1000, 20000),
  fc.constantFrom('or', 'and', 'array', 'object', 'in')
).map(([n, kind]) => {
  switch (kind) {
    case 'or':
    case 'and':
      return `${`{"${kind}":[`.repeat(n)}{"age":1}${']}'.repeat(n)}`
    case 'array':
      return `${'['.repeat(n)}${']'.repeat(n)}`
    case 'object':
      return `${'{"name":'.repeat(n)}1${'}'.repeat(n)}`
    default:
      return `{"age":{"in":${'['.repeat(n)}1${']'.repeat(n)}}}`
  }
})

/** `in`/`nin` lists around the 10 000 limit, and many constraints around 256. */
const longList: fc.Arbitrary<string> = fc.tuple(
  fc.constantFrom(255, 256, 257, 9999, 10000, 10001, 20000),
  fc.constantFrom('in', 'nin', 'shorthand', 'or', 'pk', 'keys')
).map(([n, kind]) => {
  const values = Array.from({ length: n }, (_, i) => i)
  switch (kind) {
    case 'in':
    case 'nin':
      return JSON.stringify({ age: { [kind]: values } })
    case 'shorthand':
      return JSON.stringify({ age: values })
    case 'or':
      return JSON.stringify({ or: values.slice(0, Math.min(n, 600)).map(i => ({ age: i })) })
    case 'pk':
      return JSON.stringify(values)
    default:
      return JSON.stringify({ age: Object.fromEntries(values.slice(0, Math.min(n, 300)).map(i => [`m${i}`, i])) })
  }
})

// ---------------------------------------------------------------------------------------------
// The other find parameters.

/** `sort`: valid texts and JSON forms, plus garbage. */
export function sortText (model: ModelName, valid: boolean): fc.Arbitrary<string> {
  const sortable = fieldNames(model)
  const dir = fc.constantFrom('', ' ASC', ' DESC', ' asc', ' desc', ' Desc')
  const key = fc.tuple(fc.constantFrom(...sortable), dir).map(([n, d]) => n + d)
  const distinct = fc.uniqueArray(fc.constantFrom(...sortable), { minLength: 1, maxLength: 3 })
  const good = fc.oneof(
    key,
    fc.tuple(distinct, fc.array(dir, { minLength: 3, maxLength: 3 })).map(([ns, ds]) =>
      ns.map((n, i) => n + ds[i]).join(',')
    ),
    fc.tuple(distinct, fc.array(fc.constantFrom('ASC', 'DESC', 'asc', 'desc'), { minLength: 3, maxLength: 3 })).map((
      [ns, ds]
    ) => JSON.stringify(ns.map((n, i) => ({ [n]: ds[i] })))),
    fc.tuple(distinct, fc.array(fc.constantFrom(1, -1), { minLength: 3, maxLength: 3 })).map(([ns, ds]) =>
      JSON.stringify(Object.fromEntries(ns.map((n, i) => [n, ds[i]])))
    ),
    fc.tuple(distinct, fc.array(dir, { minLength: 3, maxLength: 3 })).map(([ns, ds]) =>
      JSON.stringify(ns.map((n, i) => n + ds[i]))
    )
  )
  if (valid) return good
  return fc.oneof(
    { weight: 2, arbitrary: good },
    {
      weight: 3,
      arbitrary: fc.tuple(
        fc.constantFrom(...WHERE_KEYS),
        fc.constantFrom('', ' ASC', ' DOWN', ' 1', ' -1', ' ASC DESC', '  DESC', '\tDESC', ' ascending')
      ).map(([n, d]) => n + d)
    },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        '',
        ' ',
        ',',
        'name,',
        ',name',
        'name,,age',
        'name,name',
        'name ASC, name DESC',
        '[',
        '{',
        '[]',
        '{}',
        '[1]',
        '[null]',
        '[[]]',
        '{"name":0}',
        '{"name":2}',
        '{"name":"up"}',
        '{"name":null}',
        '[{"name":"ASC","age":"DESC"}]',
        '[{}]',
        '"name"',
        'null',
        '1',
        '{"name":1e309}',
        '["\\ud800"]',
        '{"\\u0000":1}',
        'pets',
        'password',
        'meta DESC',
        'id DESC,id'
      )
    },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }).map(v => JSON.stringify(v)) },
    { weight: 1, arbitrary: badText }
  )
}

/** `select` / `omit` / `populate` lists. */
function nameList (pool: readonly string[], valid: boolean): fc.Arbitrary<string> {
  const good = fc.uniqueArray(fc.constantFrom(...pool), { minLength: 1, maxLength: pool.length }).map(a => a.join(','))
  if (valid) return good
  return fc.oneof(
    { weight: 2, arbitrary: good },
    {
      weight: 2,
      arbitrary: fc.array(
        fc.constantFrom(
          ...ALL_NAMES,
          'password',
          '',
          ' ',
          'false',
          'true',
          '*',
          'id',
          'pets.owner',
          '[pets]',
          '__proto__'
        ),
        { maxLength: 4 }
      ).map(a => a.join(','))
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom('', ',', 'false', 'true', 'FALSE', '0', 'null', '[]', 'pets,', ' pets ', 'pets, tags')
    },
    { weight: 1, arbitrary: badText }
  )
}

export function selectText (model: ModelName, valid: boolean): fc.Arbitrary<string> {
  return nameList(fieldNames(model), valid)
}

export function omitText (model: ModelName, valid: boolean): fc.Arbitrary<string> {
  return nameList(fieldNames(model).filter(n => n !== MODELS[model].pk), valid)
}

export function populateText (model: ModelName, valid: boolean): fc.Arbitrary<string> {
  const pool = associations(model)
  const list = pool.length === 0 ? fc.constant('false') : nameList(pool, valid)
  return fc.oneof({ weight: 4, arbitrary: list }, { weight: 1, arbitrary: fc.constantFrom('false', '') })
}

const limitGood = fc.oneof(fc.nat(12).map(String), fc.constant('Infinity'))
const limitBad = fc.oneof(
  limitGood,
  fc.constantFrom(
    '-1',
    '1.5',
    '',
    ' ',
    'abc',
    '1e3',
    '9007199254740993',
    '9007199254740991',
    '00',
    ' 1',
    '1 ',
    '+1',
    'infinity',
    '-Infinity',
    'NaN',
    '0x10',
    '9'.repeat(400),
    '1,2',
    '１',
    '١'
  ),
  badText
)

// ---------------------------------------------------------------------------------------------
// Query strings and paths.

/** One query parameter, before encoding. */
export interface Param {
  readonly key: string
  readonly value: string | undefined
}

/** Percent-encodes a text; lone surrogates become their (invalid) WTF-8 bytes. */
export function pct (value: string): string {
  let out = ''
  for (const char of value) {
    const unit = char.charCodeAt(0)
    if (char.length === 1 && unit >= 0xd800 && unit <= 0xdfff) {
      out += `%${(0xe0 | (unit >> 12)).toString(16).toUpperCase()}%${
        (0x80 | ((unit >> 6) & 0x3f)).toString(16).toUpperCase()
      }%${(0x80 | (unit & 0x3f)).toString(16).toUpperCase()}`
    } else {
      out += encodeURIComponent(char)
    }
  }
  return out
}

/** Encodings of a parameter: proper, with broken escapes, with `+` for spaces, without `=`. */
export type Encoding = 'pct' | 'broken' | 'plus' | 'bare'
const BROKEN_ESCAPES = [
  '%C3%28',
  '%FF',
  '%',
  '%2',
  '%G0',
  '%E0%80%80',
  '%ED%A0%80',
  '%C0%AF',
  '%F4%90%80%80',
  '%80',
  '%C3',
  '%%',
  '%u00e9'
]

function encodeParam (param: Param, encoding: Encoding, at: number, broken: string): string {
  const key = pct(param.key)
  if (param.value === undefined || encoding === 'bare') return key
  let value = pct(param.value)
  if (encoding === 'plus') value = value.replaceAll('%20', '+')
  if (encoding === 'broken') {
    const i = at % (value.length + 1)
    value = value.slice(0, i) + broken + value.slice(i)
  }
  return `${key}=${value}`
}

const encodedParam = (param: fc.Arbitrary<Param>): fc.Arbitrary<string> =>
  fc.tuple(
    param,
    fc.constantFrom<Encoding>(
      'pct',
      'pct',
      'pct',
      'pct',
      'pct',
      'pct',
      'pct',
      'pct',
      'pct',
      'pct',
      'pct',
      'pct',
      'broken',
      'plus',
      'bare'
    ),
    fc.nat(),
    fc.constantFrom(...BROKEN_ESCAPES)
  ).map(([p, e, at, broken]) => encodeParam(p, e, at, broken))

/** The id or fk of a path, percent-encoded (or with a broken escape). */
function idSegment (model: ModelName): fc.Arbitrary<string> {
  const valid = model === 'tag' ? tagSlug.map(String) : fc.integer({ min: 0, max: 14 }).map(String)
  return fc.oneof(
    { weight: 6, arbitrary: valid.map(pct) },
    { weight: 3, arbitrary: badText.filter(s => s !== '' && s.length < 300).map(pct) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        '%FF',
        '%C3%28',
        '%00',
        '%2F',
        '1%2F2',
        '%2e%2e',
        '..',
        '.',
        '1%',
        '%E0%80%80',
        '1;2',
        '1,2',
        '1?x=1',
        '1#x',
        '0',
        '-1',
        '1.0',
        '1e0',
        '01',
        '+1',
        '2147483647',
        '2147483648',
        '9007199254740992',
        'null',
        'undefined',
        '%20',
        'x'.repeat(99),
        'x'.repeat(101),
        '%F0%9F%98%80'
      )
    }
  )
}

/** A path of a read route of the model: find, findOne, populate, or an association it does not have. */
function readPath (model: ModelName): fc.Arbitrary<string> {
  const assoc = associations(model)
  return fc.oneof(
    { weight: 4, arbitrary: fc.constant(`/${model}`) },
    { weight: 2, arbitrary: idSegment(model).map(id => `/${model}/${id}`) },
    ...(assoc.length === 0
      ? []
      : [{
        weight: 3,
        arbitrary: fc.tuple(idSegment(model), fc.constantFrom(...assoc)).map(([id, a]) => `/${model}/${id}/${a}`)
      }]),
    {
      weight: 1,
      arbitrary: fc.tuple(idSegment(model), fc.constantFrom(...ALL_NAMES, 'Pets', 'password', 'replace', '', '%FF'))
        .map(([id, a]) => `/${model}/${id}/${a}`)
    }
  )
}

/** The child model of a read path's association (for criteria on the children), or the model. */
function criteriaModel (model: ModelName, path: string): ModelName {
  const association = path.split('/')[3]
  return association === undefined
    ? model
    : (MODELS[model].collections[association] ??
      (association === 'owner' ? 'user' : association === 'bestPet' ? 'pet' : model))
}

/** Garbage-leaning query parameters for a model's read routes. */
function readParam (model: ModelName): fc.Arbitrary<Param> {
  return fc.oneof(
    { weight: 5, arbitrary: whereText(model).map(value => ({ key: 'where', value })) },
    { weight: 1, arbitrary: limitBad.map(value => ({ key: 'limit', value })) },
    { weight: 1, arbitrary: limitBad.map(value => ({ key: 'skip', value })) },
    { weight: 2, arbitrary: sortText(model, false).map(value => ({ key: 'sort', value })) },
    { weight: 1, arbitrary: selectText(model, false).map(value => ({ key: 'select', value })) },
    { weight: 1, arbitrary: omitText(model, false).map(value => ({ key: 'omit', value })) },
    { weight: 1, arbitrary: populateText(model, false).map(value => ({ key: 'populate', value })) },
    {
      weight: 2,
      arbitrary: fc.tuple(fc.constantFrom(...MODELS[model].fields), fc.boolean()).chain(([f, good]) =>
        (good ? validValue(model, f) : garbageValue).map(v => ({
          key: f.name,
          value: typeof v === 'string' ? v : JSON.stringify(v) ?? 'x'
        }))
      )
    },
    {
      weight: 1,
      arbitrary: fc.tuple(
        fc.constantFrom(...WHERE_KEYS, 'where[]', 'where[age]', 'limit[]', 'fks', 'x', '', '%FF'),
        fc.option(fc.oneof(text, badText), { nil: undefined })
      ).map(([key, value]) => ({ key, value }))
    },
    { weight: 2, arbitrary: relationParam(model) }
  )
}

/** A populate path of a model, one or two associations deep, and the model it leads to. */
function populatePath (model: ModelName): fc.Arbitrary<{ path: string, target: ModelName, collection: boolean }> {
  const links = relations(model)
  if (links.length === 0) return fc.constant({ path: 'owner', target: 'user', collection: false })
  return fc.constantFrom(...links).chain(link => {
    const deeper = relations(link.target)
    const here = fc.constant({ path: link.name, target: link.target, collection: link.quantifiers.includes('some') })
    return deeper.length === 0
      ? here
      : fc.oneof(
        here,
        fc.constantFrom(...deeper).map(next => ({
          path: `${link.name}.${next.name}`,
          target: next.target,
          collection: next.quantifiers.includes('some')
        }))
      )
  })
}

/** Cursors, most of them not this query's (docs/criteria.md#cursor-pages). */
const cursorText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('', 'x', '%%%', 'WzFd', 'WzEsIngiLDFd', '=', '[1]'),
  fc.jsonValue({ maxDepth: 2 }).map(value => Buffer.from(JSON.stringify(value) ?? '').toString('base64url')),
  fc.tuple(
    fc.constantFrom(1, 2, 0, '1'),
    fc.string({ maxLength: 8 }),
    fc.array(fc.oneof(garbageValue, fc.nat()), { maxLength: 4 })
  )
    .map(([version, binding, values]) =>
      Buffer.from(JSON.stringify([version, binding, ...values])).toString('base64url')
    ),
  badText
)

/** The parameters of populated associations (`pets.where`, `populate=pets.tags`) and cursors, well-formed and not. */
function relationParam (model: ModelName): fc.Arbitrary<Param> {
  return fc.oneof(
    {
      weight: 4,
      arbitrary: populatePath(model).chain(({ path, target }) =>
        fc.oneof(
          whereText(target).map(value => ({ key: `${path}.where`, value })),
          limitBad.map(value => ({ key: `${path}.limit`, value })),
          limitBad.map(value => ({ key: `${path}.skip`, value })),
          sortText(target, false).map(value => ({ key: `${path}.sort`, value })),
          selectText(target, false).map(value => ({ key: `${path}.select`, value })),
          omitText(target, false).map(value => ({ key: `${path}.omit`, value })),
          fc.constant({ key: 'populate', value: path })
        )
      )
    },
    {
      weight: 2,
      arbitrary: fc.tuple(fc.constantFrom('after', 'before'), cursorText).map(([key, value]) => ({ key, value }))
    },
    {
      weight: 1,
      arbitrary: fc.tuple(
        fc.constantFrom(
          '.where',
          'pets.',
          'pets..limit',
          'pets.where.where',
          '__proto__.limit',
          'constructor.where',
          'pets.pets.pets.pets.limit',
          'toString.sort'
        ),
        fc.oneof(text, badText)
      )
        .map(([key, value]) => ({ key, value }))
    }
  )
}

/** Paths that are no model's: the socket endpoint, the second registration, near misses. */
const OTHER_PATHS = [
  '/',
  '/socket',
  '/socket/',
  '/ci/socket',
  '/ci',
  '/ci/',
  '/ci/user',
  '/ci/tag/admin/users',
  '/USER',
  '/user/',
  '/users',
  '/user//1',
  '/pet/1/owner/x',
  '/user/1/pets/1/x',
  '/%FF',
  '/user%00',
  '/user;x'
]

/** A read request of any read route of any model: path plus a garbage-leaning query string. */
export const readUrl: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 20,
    arbitrary: fc.constantFrom(...MODEL_NAMES).chain(model => readPath(model).map(path => ({ path, model })))
  },
  {
    weight: 1,
    arbitrary: fc.tuple(fc.constantFrom(...OTHER_PATHS), fc.constantFrom(...MODEL_NAMES)).map(([path, model]) => ({
      path,
      model
    }))
  }
).chain(({ path, model }) =>
  fc.array(encodedParam(readParam(criteriaModel(model, path))), { maxLength: 5 }).map(params =>
    params.length === 0 ? path : `${path}?${params.join('&')}`
  )
)

// ---------------------------------------------------------------------------------------------
// Valid find requests, for the differential.

function validFindParams (model: ModelName): fc.Arbitrary<Param[]> {
  return fc.record({
    where: fc.option(validWhere(model, 2).map(w => JSON.stringify(w)), { freq: 4, nil: undefined }),
    // A query-string value is text: `true` is a boolean's value only (a number takes digits).
    attr: fc.option(
      fc.constantFrom(...MODELS[model].fields.filter(f => f.kind !== 'json')).chain(f =>
        fc.array(validValue(model, f).filter(v => typeof v !== 'boolean' || f.kind === 'boolean'), {
          minLength: 1,
          maxLength: 2
        }).map(vs => vs.map(v => ({ key: f.name, value: String(v) })))
      ),
      { freq: 2, nil: undefined }
    ),
    limit: fc.option(limitGood, { freq: 2, nil: undefined }),
    skip: fc.option(fc.oneof(fc.nat(3), fc.nat(12)).map(String), { freq: 2, nil: undefined }),
    sort: fc.option(sortText(model, true), { nil: undefined }),
    projection: fc.option(
      fc.oneof(
        selectText(model, true).map(value => ({ key: 'select', value })),
        omitText(model, true).map(value => ({ key: 'omit', value }))
      ),
      { freq: 2, nil: undefined }
    ),
    populate: fc.option(populateText(model, true), { nil: undefined }),
    // Populated deeper with criteria of its own, or a cursor page (docs/criteria.md).
    deep: fc.option(
      populatePath(model).chain(({ path, target, collection }) =>
        fc.record({
          limit: fc.option(fc.nat(3).map(String), { nil: undefined }),
          skip: fc.option(fc.nat(2).map(String), { nil: undefined }),
          sort: fc.option(sortText(target, true), { nil: undefined }),
          where: fc.option(validWhere(target, 1).map(w => JSON.stringify(w)), { nil: undefined })
        }).map(
          criteria => [
            { key: 'populate', value: path },
            ...Object.entries(collection ? criteria : {}).filter(([, value]) => value !== undefined)
              .map(([name, value]) => ({ key: `${path}.${name}`, value: value as string }))
          ]
        )
      ),
      { freq: 3, nil: undefined }
    ),
    cursor: fc.option(fc.constantFrom('after', 'before'), { freq: 4, nil: undefined })
  }).map(r => {
    const params: Param[] = []
    if (r.where !== undefined) params.push({ key: 'where', value: r.where })
    if (r.attr !== undefined) params.push(...r.attr)
    if (r.limit !== undefined) params.push({ key: 'limit', value: r.limit })
    if (r.skip !== undefined) params.push({ key: 'skip', value: r.skip })
    if (r.sort !== undefined) params.push({ key: 'sort', value: r.sort })
    if (r.projection !== undefined) params.push(r.projection)
    if (r.deep !== undefined && relations(model).length > 0) params.push(...r.deep)
    else if (r.populate !== undefined) params.push({ key: 'populate', value: r.populate })
    if (r.cursor !== undefined && r.skip === undefined) params.push({ key: r.cursor, value: '' })
    return params
  })
}

const query = (params: readonly Param[]): string =>
  params.length === 0 ? '' : `?${params.map(p => `${pct(p.key)}=${pct(p.value ?? '')}`).join('&')}`

/**
 * A valid read: find with criteria (mostly), findOne with a projection, or a collection's
 * children with criteria; under the default registration or the case-insensitive one (`/ci`).
 */
export const validReadUrl: fc.Arbitrary<string> = fc.tuple(
  fc.constantFrom('', '', '/ci'),
  fc.constantFrom(...MODEL_NAMES).chain(model =>
    fc.oneof(
      { weight: 6, arbitrary: validFindParams(model).map(params => `/${model}${query(params)}`) },
      {
        weight: 1,
        arbitrary: fc.tuple(
          model === 'tag'
            ? fc.constantFrom('admin', 'beta', 'vip', 'none', 'é', 'a/b', 'Z')
            : fc.integer({ min: 1, max: 40 }),
          fc.option(
            fc.oneof(
              selectText(model, true).map(value => ({ key: 'select', value })),
              omitText(model, true).map(value => ({ key: 'omit', value }))
            ),
            { nil: undefined }
          ),
          fc.option(populateText(model, true), { nil: undefined })
        )
          .map(([id, projection, populate]) =>
            `/${model}/${pct(String(id))}${
              query([
                ...(projection === undefined ? [] : [projection]),
                ...(populate === undefined ? [] : [{ key: 'populate', value: populate }])
              ])
            }`
          )
      },
      ...(collections(model).length === 0
        ? []
        : [{
          weight: 3,
          arbitrary: fc.tuple(
            model === 'tag' ? fc.constantFrom('admin', 'beta', 'vip', 'Z', 'é', 'a/b') : fc.integer({ min: 1, max: 6 }),
            fc.constantFrom(...collections(model))
          ).chain(([id, c]) =>
            validFindParams(MODELS[model].collections[c]).map(params =>
              `/${model}/${pct(String(id))}/${c}${
                query(
                  params.filter(p =>
                    p.key !== 'populate' && p.key !== 'after' && p.key !== 'before' && !p.key.includes('.')
                  )
                )
              }`
            )
          )
        }])
    )
  )
).map(([prefix, url]) => prefix + url)

// ---------------------------------------------------------------------------------------------
// Writes.

/** What `app.inject()` sends: a method, a URL, and a payload (JSON value, or raw bytes with a type). */
export interface WriteRequest {
  readonly method: 'POST' | 'PATCH' | 'PUT' | 'DELETE' | 'GET' | 'HEAD'
  readonly url: string
  readonly json?: unknown
  readonly raw?: string | Buffer
  readonly type?: string
}

function bodyValue (model: ModelName, field: Field): fc.Arbitrary<unknown> {
  if (field.kind === 'json') {
    return fc.oneof(
      { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
      {
        weight: 1,
        arbitrary: fc.constantFrom(
          null,
          { plan: 'pro' },
          [1, 2],
          'text',
          1e308,
          { a: '\u0000' },
          ['\ud800'],
          objectOf([['\ud800', 1]]),
          objectOf([['__proto__', { x: 1 }]]),
          { s: 'x'.repeat(300) }
        )
      },
      { weight: 1, arbitrary: fc.constantFrom(30, 31, 32, 33, 64).map(nested) }
    )
  }
  return validValue(model, field)
}

/** A value nested `depth` arrays/objects deep. */
function nested (depth: number): unknown {
  let value: unknown = 1
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value] : { k: value }
  return value
}

/** A create/update body: known attributes with valid or garbage values, plus names that do not belong. */
function body (model: ModelName, create: boolean): fc.Arbitrary<Record<string, unknown>> {
  const fields = MODELS[model].fields
  const required = create ? fields.filter(f => !f.nullable && !['id', 'active', 'weight'].includes(f.name)) : []
  const requiredValues = fc.tuple(...required.map(f => bodyValue(model, f).map(v => [f.name, v] as const)))
  const extra = fc.array(
    fc.oneof(
      {
        weight: 6,
        arbitrary: fc.constantFrom(...fields).chain(f =>
          fc.oneof({ weight: 3, arbitrary: bodyValue(model, f) }, { weight: 1, arbitrary: nearValue(f) }, {
            weight: 1,
            arbitrary: garbageValue
          }).map(v => [f.name, v] as const)
        )
      },
      {
        weight: 1,
        arbitrary: fc.tuple(
          fc.constantFrom(
            ...collections(model),
            ...ALL_NAMES,
            'password',
            '__proto__',
            'constructor',
            'toString',
            '',
            'Name',
            'createdAt'
          ),
          garbageValue
        )
      }
    ),
    { maxLength: 4 }
  )
  return fc.tuple(fc.boolean(), requiredValues, extra).map(([keep, req, more]) =>
    objectOf([...(keep || !create ? req : req.slice(1)), ...more])
  )
}

const RAW_BODIES = [
  '',
  ' ',
  '{',
  '}',
  '{"name":}',
  '{"name":"a",}',
  "{'name':'a'}",
  'null',
  'true',
  '1',
  '"x"',
  '[]',
  '[1,2]',
  '{"name":1e309}',
  '{"age":1e309,"name":"x"}',
  '{"name":"x","age":-1e309}',
  '{"name":"x","born":1e309}',
  '{"name":"x","meta":1e309}',
  '{"name":"\\ud800"}',
  '{"name":"\\u0000"}',
  '{"name":"x","meta":{"\\ud800":1}}',
  '{"name":"x","meta":"\\udfff"}',
  '{"__proto__":{"name":"x"}}',
  '{"name":"x","__proto__":{"admin":true}}',
  '{"constructor":{"prototype":{"name":"x"}}}',
  '{"name":"a","name":"b"}',
  '{"name":"x"}garbage',
  '\u0000',
  '{"name":"x","bestPet":1e309}',
  '{"name":"x","owner":1e309}',
  '{"slug":1e309,"label":"x"}',
  '{"name":"x","species":"y","owner":"1e309"}',
  '{"fks":[1e309]}',
  '[1e309]',
  '{"fks":[1,1e309]}',
  '["\\ud800"]',
  '{"fks":["\\u0000"]}',
  '{"fks":{"0":1}}',
  '{"fks":null}',
  '{}'
]

function deepBody (): fc.Arbitrary<string> {
  return fc.tuple(
    fc.constantFrom(31, 32, 33, 100, 5000, 100000),
    fc.constantFrom('meta-array', 'meta-object', 'top', 'fks')
  ).map(([n, where]) => {
    switch (where) {
      case 'meta-array':
        return `{"name":"deep","meta":${'['.repeat(n)}${']'.repeat(n)}}`
      case 'meta-object':
        return `{"name":"deep","meta":${'{"a":'.repeat(n)}1${'}'.repeat(n)}}`
      case 'top':
        return `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`
      default:
        return `{"fks":${'['.repeat(n)}1${']'.repeat(n)}}`
    }
  })
}

/** Bytes that are not UTF-8, inside otherwise well-formed JSON. */
const invalidUtf8: fc.Arbitrary<Buffer> = fc.constantFrom(
  [0xff],
  [0xc3, 0x28],
  [0xed, 0xa0, 0x80],
  [0xc0, 0xaf],
  [0xf4, 0x90, 0x80, 0x80],
  [0x80],
  [0xe2, 0x82]
)
  .map(bytes =>
    Buffer.concat([
      Buffer.from('{"name":"a'),
      Buffer.from(bytes),
      Buffer.from('b","species":"x","label":"y","slug":"z"}')
    ])
  )

function payload (json: fc.Arbitrary<unknown>): fc.Arbitrary<Pick<WriteRequest, 'json' | 'raw' | 'type'>> {
  return fc.oneof(
    { weight: 12, arbitrary: json.map(value => ({ json: value })) },
    { weight: 2, arbitrary: fc.constantFrom(...RAW_BODIES).map(raw => ({ raw, type: 'application/json' })) },
    { weight: 1, arbitrary: deepBody().map(raw => ({ raw, type: 'application/json' })) },
    { weight: 1, arbitrary: invalidUtf8.map(raw => ({ raw, type: 'application/json' })) },
    {
      weight: 1,
      arbitrary: fc.tuple(
        fc.constantFrom(
          'text/plain',
          'application/x-www-form-urlencoded',
          'application/json; charset=latin1',
          'application/json; charset=utf-8',
          'Application/JSON',
          'application/jsonx',
          'multipart/form-data',
          'application/octet-stream',
          ''
        ),
        fc.constantFrom('{"name":"x"}', 'name=x', '')
      ).map(([type, raw]) => ({ raw, type }))
    }
  )
}

function fkValues (child: ModelName): fc.Arbitrary<unknown[]> {
  const good = child === 'tag' ? tagSlug : child === 'pet' ? petId : userId
  return fc.array(
    fc.oneof({ weight: 6, arbitrary: good }, {
      weight: 1,
      arbitrary: fc.oneof(badText, fc.constantFrom(0, -1, 1.5, 2147483648, 1e300, 99, '99', true, null, [1], { id: 1 }))
    }),
    { maxLength: 6 }
  )
}

/** A write request on any write route of any model (and the replace shortcut). */
export const writeRequest: fc.Arbitrary<WriteRequest> = fc.constantFrom(...MODEL_NAMES).chain(model => {
  const id = idSegment(model)
  const colls = collections(model)
  const options: Array<{ weight: number, arbitrary: fc.Arbitrary<WriteRequest> }> = [
    {
      weight: 5,
      arbitrary: payload(body(model, true)).map(p => ({ method: 'POST' as const, url: `/${model}`, ...p }))
    },
    {
      weight: 5,
      arbitrary: fc.tuple(id, payload(body(model, false))).map(([i, p]) => ({
        method: 'PATCH' as const,
        url: `/${model}/${i}`,
        ...p
      }))
    },
    { weight: 1, arbitrary: id.map(i => ({ method: 'DELETE' as const, url: `/${model}/${i}` })) }
  ]
  if (colls.length > 0) {
    const coll = fc.constantFrom(...colls)
    const childFk = (c: string): fc.Arbitrary<string> => idSegment(MODELS[model].collections[c])
    options.push(
      {
        weight: 3,
        arbitrary: fc.tuple(id, coll).chain(([i, c]) =>
          childFk(c).map(fk => ({ method: 'PUT' as const, url: `/${model}/${i}/${c}/${fk}` }))
        )
      },
      {
        weight: 3,
        arbitrary: fc.tuple(id, coll).chain(([i, c]) =>
          childFk(c).map(fk => ({ method: 'DELETE' as const, url: `/${model}/${i}/${c}/${fk}` }))
        )
      },
      {
        weight: 3,
        arbitrary: fc.tuple(id, coll).chain(([i, c]) =>
          payload(
            fc.oneof(
              fkValues(MODELS[model].collections[c]).map(fks => ({ fks })),
              fkValues(MODELS[model].collections[c]),
              garbageValue
            )
          ).map(p => ({ method: 'PUT' as const, url: `/${model}/${i}/${c}`, ...p }))
        )
      },
      {
        weight: 1,
        arbitrary: fc.tuple(id, coll).chain(([i, c]) =>
          fc.oneof(
            fkValues(MODELS[model].collections[c]).map(v => JSON.stringify(v)),
            badText,
            fc.constantFrom('[1e309]', '[', '', '{"0":1}', '[[1]]')
          ).map(fks => ({ method: 'GET' as const, url: `/${model}/${i}/${c}/replace?fks=${pct(fks)}` }))
        )
      }
    )
  }
  return fc.oneof(...options)
})

// ---------------------------------------------------------------------------------------------
// Websocket frames.

/** How many objects and arrays a JSON value nests (a scalar: 0, `[]`: 1, `[[1]]`: 2). */
export function depthOf (value: unknown): number {
  let deepest = 0
  const stack: Array<[unknown, number]> = [[value, 0]]
  while (stack.length > 0) {
    const [item, depth] = stack.pop() as [unknown, number]
    if (typeof item !== 'object' || item === null) continue
    deepest = Math.max(deepest, depth + 1)
    for (const child of Object.values(item)) stack.push([child, depth + 1])
  }
  return deepest
}

/** A frame to send, and what the endpoint must make of it. */
export interface FrameCase {
  readonly data: string | Buffer
  readonly binary: boolean
  /** Whether the frame is refused as a whole (BP_ERR_INVALID_FRAME). */
  readonly invalid: boolean
  /** The `id` the answer must carry. */
  readonly id: string | number | null
  readonly describe: string
}

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']
const HEADER_NAMES = [
  'accept',
  'accept-language',
  'content-type',
  'content-length',
  'transfer-encoding',
  'host',
  'x-forwarded-for',
  'cookie',
  'authorization',
  'connection',
  'upgrade',
  'expect',
  'content-encoding',
  'X-Custom',
  'if-none-match',
  'range',
  ''
]

/** A URL a frame may carry: any read or write URL, or an odd one (sent as is, unencoded). */
const frameUrl: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: readUrl },
  { weight: 2, arbitrary: writeRequest.map(w => w.url) },
  {
    weight: 1,
    arbitrary: fc.tuple(fc.constantFrom('/user', '/pet/1', '/tag/admin/users', '/user/1/pets'), fc.oneof(text, badText))
      .map(([p, s]) => `${p}${s.startsWith('/') ? '' : '?'}${s}`)
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '/',
      '/socket',
      '/user/',
      '/user//1',
      '/USER',
      '/user?',
      '/user#x',
      '/user?where={"age":1}',
      '/user/1/../2',
      '/user/%',
      '/ci/user',
      '/user/é',
      '/user?name=é',
      '/user/\u0000',
      '/user?\ud800',
      '/' + 'x'.repeat(10000),
      '/user?where=' + '['.repeat(3000)
    )
  }
)

/**
 * A frame: a request of any route (with body and headers, valid or not), or a frame the endpoint
 * must refuse (not JSON, binary, not an object, a bad id, method, url or headers, a body nested too
 * deep). `seq` makes ids unique.
 */
export function frame (seq: () => number): fc.Arbitrary<FrameCase> {
  const goodId = fc.boolean().map(asNumber => {
    const n = seq()
    return asNumber ? n : `f${n}`
  })
  const headers = fc.option(
    entriesToObject(
      fc.array(
        fc.tuple(
          fc.constantFrom(...HEADER_NAMES),
          fc.oneof(
            text,
            fc.constantFrom(
              'application/json',
              '0',
              '5',
              '-1',
              'chunked',
              'text/plain',
              'gzip',
              '100-continue',
              'bytes=0-1',
              ''
            )
          )
        ),
        { maxLength: 3 }
      )
    ),
    { freq: 3, nil: undefined }
  )
  const request = fc.tuple(
    goodId,
    fc.constantFrom(...METHODS),
    frameUrl,
    fc.option(
      fc.oneof(fc.jsonValue({ maxDepth: 3 }), garbageValue, body('user', true), fc.array(fc.oneof(userId, tagSlug))),
      { nil: undefined }
    ),
    headers
  )
    .map(([id, method, url, b, h]): FrameCase => {
      const frame: Record<string, unknown> = { id, method, url }
      if (b !== undefined) frame.body = b
      if (h !== undefined) frame.headers = h
      // docs/protocol.md: a body nested deeper than `limits.maxJsonDepth` + 1 (33) refuses the frame.
      // docs/protocol.md: header names are HTTP tokens, values what HTTP can carry.
      const badHeader = Object.entries(h ?? {}).some(([name, value]) =>
        !/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(name) || /[^\t\x20-\x7e\x80-\xff]/.test(String(value))
      )
      // docs/protocol.md: a url holds no control character (an HTTP request line cannot).
      const badUrl = [...url].some(char => char.charCodeAt(0) < 0x20 || char.charCodeAt(0) === 0x7f)
      return {
        data: JSON.stringify(frame),
        binary: false,
        invalid: depthOf(b) > 33 || badHeader || badUrl,
        id,
        describe: 'request'
      }
    })
  // A well-formed request whose body nests `depth` levels (more than 33 refuses the frame).
  const deep = fc.tuple(goodId, fc.constantFrom(1, 32, 33, 34, 35, 1000, 50000)).map(([id, depth]): FrameCase => ({
    data: `{"id":${JSON.stringify(id)},"method":"POST","url":"/user","body":${'['.repeat(depth)}${']'.repeat(depth)}}`,
    binary: false,
    invalid: depth > 33,
    id,
    describe: `body nested ${depth}`
  }))
  // One field wrong at a time; the id echoed when it is valid.
  const wrong = fc.tuple(
    fc.oneof(
      goodId.map(id => ({ id, valid: true })),
      fc.constantFrom<unknown>(null, true, {}, [], [1], 1.5, '', 'x', -0, 1e308, { id: 1 }).map(id => ({
        id,
        valid: typeof id === 'string' || typeof id === 'number'
      })),
      fc.constant({ id: undefined, valid: false })
    ),
    fc.oneof(
      fc.constantFrom('GET', 'POST').map(m => ({ m, valid: true })),
      fc.constantFrom<unknown>(
        'get',
        'HEAD',
        'OPTIONS',
        'TRACE',
        'CONNECT',
        'PROPFIND',
        '',
        null,
        1,
        ['GET'],
        ' GET',
        'GET ',
        undefined
      ).map(m => ({ m, valid: false }))
    ),
    fc.oneof(
      fc.constantFrom('/user', '/pet/1').map(u => ({ u, valid: true })),
      fc.constantFrom<unknown>(
        'user',
        '//user',
        '//',
        '',
        'http://x/user',
        '\\user',
        ' /user',
        null,
        1,
        ['/user'],
        undefined,
        '*'
      ).map(u => ({ u, valid: false }))
    ),
    fc.oneof(
      fc.constant({ h: undefined, valid: true }),
      fc.constantFrom<unknown>({ a: 'b' }, {}).map(h => ({ h, valid: true })),
      fc.constantFrom<unknown>(null, 'x', [], ['a'], { a: 1 }, { a: null }, { a: ['b'] }, { a: { b: 'c' } }, 1).map(
        h => ({ h, valid: false })
      )
    )
  ).map(([i, m, u, h]): FrameCase => {
    const frame: Record<string, unknown> = {}
    if (i.id !== undefined) frame.id = i.id
    if (m.m !== undefined) frame.method = m.m
    if (u.u !== undefined) frame.url = u.u
    if (h.h !== undefined) frame.headers = h.h
    const invalid = !(i.valid && m.valid && u.valid && h.valid)
    return {
      data: JSON.stringify(frame),
      binary: false,
      invalid,
      id: i.valid ? i.id as string | number : null,
      describe: 'fields'
    }
  })
  const rawInvalid = fc.constantFrom<[string, string | number | null]>(
    ['{"id":1e309,"method":"GET","url":"/user"}', null],
    ['{"id":-1e309,"method":"GET","url":"/user"}', null],
    ['{"id":1e309}', null],
    ['{"method":"GET","url":"/user"}', null],
    ['', null],
    [' ', null],
    ['{', null],
    ['{"id":1,', null],
    ['null', null],
    ['true', null],
    ['1', null],
    ['"x"', null],
    ['[]', null],
    ['[{"id":1,"method":"GET","url":"/user"}]', null],
    ['NaN', null],
    ['{"id":NaN}', null],
    ["{'id':1}", null],
    ['{"id":"a","method":"GET","url":"/user"} x', null],
    ['\u0000', null],
    ['{"id":{},"method":"GET","url":"/user"}', null],
    ['{"id":"\\ud800","method":"GET"}', '\ud800'],
    ['{"id":7,"method":"GET","url":"/user","headers":{"a":"\\u0000","b":2}}', 7],
    ['{"id":"x","method":"get","url":"/user"}', 'x'],
    ['{"id":1e308,"url":"/user","method":"GET","headers":[]}', 1e308],
    ['{"id":8,"method":"GET","url":"/user/\\u0000"}', 8],
    ['{"id":9,"method":"GET","url":"/user?a=\\r\\nb"}', 9]
  ).map(([data, id]): FrameCase => ({ data, binary: false, invalid: true, id, describe: 'raw' }))
  // Valid requests written by hand (ids the endpoint must echo exactly, escapes in the url).
  const rawValid = fc.tuple(
    goodId,
    fc.constantFrom(
      (id: string) => `{"id":${id},"method":"GET","url":"/user?name=\\ud800"}`,
      (id: string) => `{"id":${id},"method":"GET","url":"/user/\\ud800"}`,
      (id: string) => `{"id":${id},"method":"POST","url":"/user","body":{"name":"\\ud800"}}`,
      (id: string) => `{"id":${id},"method":"POST","url":"/user","body":{"name":"x","meta":{"\\udfff":1}}}`,
      (id: string) => `{"id":${id},"method":"PATCH","url":"/user/1","body":{"age":1e308}}`,
      (id: string) => `{"id":${id},"method":"GET","url":"/user","headers":{"content-length":"10"}}`,
      (id: string) =>
        `{"id":${id},"method":"POST","url":"/user","headers":{"content-type":"text/plain"},"body":{"name":"x"}}`,
      (id: string) =>
        `{"id":${id},"method":"DELETE","url":"/user/1/pets/1","headers":{"content-type":"application/json","transfer-encoding":"chunked"}}`,
      (id: string) => `{"id":${id},"method":"GET","url":"/user","id":${id}}`,
      (id: string) => `{"id":${id},"method":"GET","url":"/user","body":null}`,
      (id: string) => `{"id":${id},"method":"GET","url":"/user","__proto__":{"x":1}}`,
      (id: string) => `{"id":${id},"method":"POST","url":"/user","body":{"__proto__":{"name":"x"}}}`
    )
  ).map(([id, make]): FrameCase => ({
    data: make(JSON.stringify(id)),
    binary: false,
    invalid: false,
    id,
    describe: 'raw-valid'
  }))
  const binary = fc.oneof(
    fc.uint8Array({ maxLength: 20 }).map(b => Buffer.from(b)),
    fc.constant(Buffer.from('{"id":1,"method":"GET","url":"/user"}'))
  )
    .map((data): FrameCase => ({ data, binary: true, invalid: true, id: null, describe: 'binary' }))
  const anyJson = fc.jsonValue({ maxDepth: 3 }).filter(v =>
    typeof v !== 'object' || v === null || Array.isArray(v) || !('id' in v)
  )
    .map((v): FrameCase => ({ data: JSON.stringify(v), binary: false, invalid: true, id: null, describe: 'json' }))
  // A frame above `maxPayload` (1 MiB) closes the socket with 1009 (docs/protocol.md#limits).
  const small = (frames: fc.Arbitrary<FrameCase>): fc.Arbitrary<FrameCase> =>
    frames.filter(f => Buffer.byteLength(f.data) < 1_000_000)
  return fc.oneof(
    { weight: 10, arbitrary: small(request) },
    { weight: 2, arbitrary: wrong },
    { weight: 1, arbitrary: deep },
    { weight: 1, arbitrary: rawInvalid },
    { weight: 1, arbitrary: small(rawValid) },
    { weight: 1, arbitrary: binary },
    { weight: 1, arbitrary: anyJson }
  )
}

// ---------------------------------------------------------------------------------------------
// Extra records for the differential: the seed has few values of each kind (two JSON values, no
// empty or astral names, no extreme numbers or dates), so both databases also get the same
// edge-case records, and generated ones, through the API before the reads are compared.

/** Records every run adds: values at the edges of each kind. */
export const EDGE_WRITES: readonly WriteRequest[] = [
  ...[
    { name: 'j-text', meta: 'text' },
    { name: 'j-num', meta: 5 },
    { name: 'j-neg', meta: -1.5 },
    { name: 'j-true', meta: true },
    { name: 'j-false', meta: false },
    { name: 'j-obj', meta: { a: 1 } },
    { name: 'j-empty-obj', meta: {} },
    { name: 'j-arr', meta: [2] },
    { name: 'j-empty-arr', meta: [] },
    { name: 'j-str-num', meta: '5' },
    { name: 'j-nested', meta: { a: [1, { b: null }] } },
    { name: '', age: 2147483647, born: '0001-01-01T00:00:00.000Z' },
    { name: '😀', age: -2147483648, born: '9999-12-31T23:59:59.999Z' },
    { name: '\uffff', age: 0, born: '1969-12-31T23:59:59.999Z' },
    { name: 'a\u0301', born: '1970-01-01T00:00:00.000Z', active: false },
    { name: 'á', age: 30, bestPet: 5 },
    { name: 'alice ', age: 31, bestPet: 1 },
    { name: 'ALICE%', age: -1 },
    { name: 'a_b\\c', age: 30 },
    { name: 'Zoë', age: 29, born: '1990-01-01T00:00:00.001Z' },
    { name: 'zoe', age: 29, born: '1989-12-31T23:59:59.999Z' }
  ].map(json => ({ method: 'POST' as const, url: '/user', json })),
  ...[
    { name: 'Ω', species: 'dog', owner: 4 },
    { name: 'rex', species: 'Dog', owner: 1 },
    { name: '', species: '', owner: null }
  ].map(json => ({ method: 'POST' as const, url: '/pet', json })),
  ...[
    { slug: 'a/b', label: 'slash', weight: -1 },
    { slug: 'é', label: 'é', weight: 2147483647 },
    { slug: 'Z', label: '', weight: 5 },
    { slug: '%', label: '%', weight: 5 },
    { slug: 'a b', label: 'space', weight: 0 }
  ].map(json => ({ method: 'POST' as const, url: '/tag', json })),
  { method: 'PUT', url: '/user/5/tags', json: { fks: ['é', 'a/b', 'admin'] } },
  { method: 'PUT', url: '/user/4/friends', json: [1, 2, 3, 5, 6, 7] },
  { method: 'PUT', url: '/user/3/pets/4' },
  { method: 'PUT', url: '/tag/Z/users/9' }
]

const extraUser = fc.record({
  name: text,
  age: fc.option(fc.integer({ min: -5, max: 70 }), { nil: null }),
  active: fc.boolean(),
  born: fc.option(
    fc.date({
      min: new Date('1900-01-01T00:00:00.000Z'),
      max: new Date('2100-01-01T00:00:00.000Z'),
      noInvalidDate: true
    }).map(d => d.toISOString()),
    { nil: null }
  ),
  meta: fc.option(fc.jsonValue({ maxDepth: 2 }), { nil: null }),
  bestPet: fc.option(fc.integer({ min: 1, max: 5 }), { nil: null })
}, { requiredKeys: ['name'] })

const extraPet = fc.record({
  name: text,
  species: fc.constantFrom('dog', 'cat', 'fish', 'Dog', 'émeu', ''),
  owner: fc.option(fc.integer({ min: 1, max: 10 }), { nil: null })
})

const extraTag = fc.record({
  slug: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 4 }),
  label: text,
  weight: fc.integer({ min: -3, max: 12 })
})

/** Generated records and links (valid, mostly; a refused one is compared across databases too). */
export const extraWrites: fc.Arbitrary<WriteRequest[]> = fc.tuple(
  fc.array(extraUser, { maxLength: 15 }),
  fc.array(extraPet, { maxLength: 6 }),
  fc.array(extraTag, { maxLength: 4 }),
  fc.array(
    fc.oneof(
      fc.tuple(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 12 })).map(([a, b]): WriteRequest => ({
        method: 'PUT',
        url: `/user/${a}/friends/${b}`
      })),
      fc.tuple(fc.integer({ min: 1, max: 12 }), fc.constantFrom('admin', 'beta', 'vip')).map((
        [a, b]
      ): WriteRequest => ({ method: 'PUT', url: `/user/${a}/tags/${b}` })),
      fc.tuple(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 5 })).map(([a, b]): WriteRequest => ({
        method: 'PUT',
        url: `/user/${a}/pets/${b}`
      }))
    ),
    { maxLength: 10 }
  )
).map(([users, pets, tags, links]) => [
  ...users.map(json => ({ method: 'POST' as const, url: '/user', json })),
  ...pets.map(json => ({ method: 'POST' as const, url: '/pet', json })),
  ...tags.map(json => ({ method: 'POST' as const, url: '/tag', json })),
  ...links
])

// ---------------------------------------------------------------------------------------------
// Complete find requests for the reference reading (test/helpers/fuzz-oracle.ts).

/** Sort keys as data, and one of the textual forms docs/criteria.md#sort lists. */
export interface SortSpec {
  readonly keys: ReadonlyArray<{ attribute: string, direction: 'ASC' | 'DESC' }>
  readonly params: readonly Param[]
}

function sortSpec (model: ModelName): fc.Arbitrary<SortSpec> {
  // Sorting by a JSON attribute is refused (docs/criteria.md#sort).
  const sortable = MODELS[model].fields.filter(f => f.kind !== 'json').map(f => f.name)
  const keys = fc.uniqueArray(fc.constantFrom(...sortable), { maxLength: 3 }).chain(names =>
    fc.tuple(
      ...names.map(attribute =>
        fc.constantFrom<'ASC' | 'DESC'>('ASC', 'DESC').map(direction => ({ attribute, direction }))
      )
    )
  )
  const word = (d: string): fc.Arbitrary<string> => fc.constantFrom(d, d.toLowerCase(), d[0] + d.slice(1).toLowerCase())
  return keys.chain((ks): fc.Arbitrary<SortSpec> => {
    if (ks.length === 0) return fc.constant({ keys: ks, params: [] })
    const texts = fc.tuple(
      ...ks.map(k =>
        fc.oneof(
          word(k.direction).map(d => `${k.attribute} ${d}`),
          k.direction === 'ASC' ? fc.constant(k.attribute) : word(k.direction).map(d => `${k.attribute} ${d}`)
        )
      )
    )
    return fc.oneof(
      texts.map((ts): Param[] => [{ key: 'sort', value: ts.join(', ') }]),
      texts.map((ts): Param[] => ts.map(value => ({ key: 'sort', value }))),
      texts.map((ts): Param[] => [{ key: 'sort', value: JSON.stringify(ts) }]),
      fc.constant<Param[]>([{ key: 'sort', value: JSON.stringify(ks.map(k => ({ [k.attribute]: k.direction }))) }]),
      fc.constant<Param[]>([{
        key: 'sort',
        value: JSON.stringify(Object.fromEntries(ks.map(k => [k.attribute, k.direction === 'ASC' ? 1 : -1])))
      }])
    ).map(params => ({ keys: ks, params }))
  })
}

/** A find or a collection's children, with where, sort, skip and limit, as data and as a URL. */
export interface FindCase {
  readonly model: ModelName
  /** For the children of a collection: the parent's model, key and collection. */
  readonly parent?: { readonly model: ModelName, readonly id: string | number, readonly collection: string }
  readonly where: Record<string, unknown>
  readonly ci: boolean
  readonly sort: SortSpec['keys']
  readonly skip: number
  readonly limit: number
  readonly url: string
}

export const findCase: fc.Arbitrary<FindCase> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...MODEL_NAMES).map(model => ({ model, parent: undefined })) },
  {
    weight: 2,
    arbitrary: fc.constantFrom<[ModelName, string]>(['user', 'pets'], ['user', 'friends'], ['user', 'tags'], [
      'tag',
      'users'
    ]).chain(([parent, collection]) =>
      (parent === 'tag'
        ? fc.constantFrom<string | number>('admin', 'beta', 'vip', 'Z', 'é', 'a/b')
        : fc.integer({ min: 1, max: 6 })).map(id => ({
          model: MODELS[parent].collections[collection],
          parent: { model: parent, id, collection }
        }))
    )
  }
).chain(({ model, parent }) =>
  fc.record({
    where: validWhere(model, 3),
    ci: fc.boolean(),
    sort: sortSpec(model),
    skip: fc.option(fc.oneof(fc.nat(4), fc.constantFrom(9007199254740991, 2147483648)), { freq: 3, nil: undefined }),
    limit: fc.option(fc.oneof(fc.nat(6), fc.constantFrom(9007199254740991, 2147483648)), { freq: 3, nil: undefined })
  }).map(({ where, ci, sort, skip, limit }): FindCase => {
    const params: Param[] = [{ key: 'where', value: JSON.stringify(where) }, ...sort.params, {
      key: 'select',
      value: MODELS[model].pk
    }]
    if (parent === undefined) params.push({ key: 'populate', value: 'false' })
    if (skip !== undefined) params.push({ key: 'skip', value: String(skip) })
    params.push({ key: 'limit', value: limit === undefined ? 'Infinity' : String(limit) })
    const path = parent === undefined ? `/${model}` : `/${parent.model}/${pct(String(parent.id))}/${parent.collection}`
    return {
      model,
      parent,
      where,
      ci,
      sort: sort.keys,
      skip: skip ?? 0,
      limit: limit ?? Infinity,
      url: `${ci ? '/ci' : ''}${path}${query(params)}`
    }
  })
)

/** Criteria that are mostly not valid: a `where` text, or attribute-named parameters. */
export interface CriteriaCase {
  readonly model: ModelName
  readonly ci: boolean
  /** The `where` parameter's text, or else the attribute-named parameters. */
  readonly where?: string
  readonly params?: ReadonlyArray<{ key: string, value: string }>
  readonly url: string
}

const RESERVED = new Set(['where', 'limit', 'skip', 'sort', 'select', 'omit', 'populate'])

function attributeParams (model: ModelName): fc.Arbitrary<Array<{ key: string, value: string }>> {
  const fields = MODELS[model].fields
  const value = (field: Field | undefined): fc.Arbitrary<string> =>
    fc.oneof(
      {
        weight: 3,
        arbitrary: (field === undefined ? validString : validValue(model, field)).map(v =>
          typeof v === 'string' ? v : String(v)
        )
      },
      {
        weight: 2,
        arbitrary: (field === undefined ? badText : nearValue(field)).map(v =>
          typeof v === 'string' ? v : JSON.stringify(v) ?? 'x'
        )
      },
      { weight: 2, arbitrary: badText.filter(v => v.length < 300) },
      {
        weight: 1,
        arbitrary: garbageValue.map(v => typeof v === 'string' ? v : JSON.stringify(v) ?? 'x').filter(v =>
          v.length < 300
        )
      }
    )
  const param = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...fields).chain(f => value(f).map(v => ({ key: f.name, value: v }))) },
    {
      weight: 1,
      arbitrary: fc.tuple(fc.constantFrom(...WHERE_KEYS.filter(k => !RESERVED.has(k) && k !== '')), value(undefined))
        .map(([key, v]) => ({ key, value: v }))
    }
  )
  return fc.array(param, { minLength: 1, maxLength: 4 })
}

/** One constraint on one attribute, its value just off the attribute's kind (or fine). */
function singleConstraint (model: ModelName): fc.Arbitrary<Record<string, unknown>> {
  return fc.constantFrom(...MODELS[model].fields).chain(field => {
    const value = fc.oneof({ weight: 3, arbitrary: nearValue(field) }, {
      weight: 1,
      arbitrary: validValue(model, field)
    })
    return fc.oneof(
      value,
      fc.tuple(fc.constantFrom(...MODIFIER_NAMES.slice(0, 11)), value).map(([op, v]) => objectOf([[op, v]])),
      fc.array(value, { minLength: 1, maxLength: 3 }).map(vs => ({ in: vs }))
    ).map(c => objectOf([[field.name, c]]))
  })
}

export const criteriaCase: fc.Arbitrary<CriteriaCase> = fc.tuple(fc.constantFrom(...MODEL_NAMES), fc.boolean()).chain(
  ([model, ci]) => {
    const tail = (prefix: string): string =>
      `${ci ? '/ci' : ''}/${model}?${prefix}&select=${MODELS[model].pk}&populate=false&limit=Infinity`
    return fc.oneof(
      {
        weight: 3,
        arbitrary: whereText(model).map((where): CriteriaCase => ({
          model,
          ci,
          where,
          url: tail(`where=${pct(where)}`)
        }))
      },
      {
        weight: 2,
        arbitrary: singleConstraint(model).map(w => JSON.stringify(w)).map((where): CriteriaCase => ({
          model,
          ci,
          where,
          url: tail(`where=${pct(where)}`)
        }))
      },
      {
        weight: 1,
        arbitrary: attributeParams(model).map((params): CriteriaCase => ({
          model,
          ci,
          params,
          url: tail(params.map(p => `${pct(p.key)}=${pct(p.value)}`).join('&'))
        }))
      }
    )
  }
)
