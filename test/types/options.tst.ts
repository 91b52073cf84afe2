// The option schema and the public option types cannot drift apart: the schema's static type is
// `BlueprintsOptions` exactly (same keys at every level, same optionality, same types).
import { describe, expect, test } from 'tstyche'
import type { Static } from 'typebox'
import type { BlueprintsOptions, Limits, RealtimeOptions } from '../../src/index.ts'
import type { OPTIONS } from '../../src/option-schema.ts'

type Schema = Static<typeof OPTIONS>

describe('option schema', () => {
  test('its static type is BlueprintsOptions', () => {
    expect<Schema>().type.toBe<BlueprintsOptions>()
    expect<NonNullable<Schema['limits']>>().type.toBe<Limits>()
    expect<Exclude<NonNullable<Schema['realtime']>, boolean>>().type.toBe<RealtimeOptions>()
  })

  test('an option on one side only, or of another type, is told apart', () => {
    expect<Schema>().type.not.toBe<Omit<BlueprintsOptions, 'shortcuts'>>()
    expect<Schema>().type.not.toBe<BlueprintsOptions & { readonly extra?: string }>()
    expect<Schema>().type.not.toBe<Omit<BlueprintsOptions, 'prefix'> & { readonly prefix?: string | false }>()
    expect<Schema>().type.not.toBe<Omit<BlueprintsOptions, 'limits'> & { readonly limits?: Omit<Limits, 'maxDepth'> }>()
  })
})
