/**
 * Flat records written as JSON text straight from their rows (`Dialect.jsonText`: PostgreSQL),
 * for a find answered over HTTP (routes/serialization.ts): the statement is the record path's,
 * its rows come as the texts the server sent (where the driver can hand them over unparsed:
 * `Statement.arrays`), and one generated function per field list writes each row as the JSON
 * text of its record — with no value parsed, no record built and no serializer walking it. The
 * text is the serializer's, byte for byte: the same fields, in the order of the record's schema
 * (the model's attributes, then its singular associations' keys), each value written as the
 * serializer writes the record's (the dialect knows how, for the column types it names; a field
 * of any other type leaves the find to the record path).
 *
 * @module
 */
import type { Criteria } from '../../criteria/types.ts'
import type { Model, SingularAssociation } from '../../models/model.ts'
import type { FieldText, JsonText } from '../build/fragments.ts'
import type { ArrayRow, Field, JsonRecord } from '../connection/rows.ts'

/** How a flat find's rows are written: each row's JSON text, and a cursor page's sort keys of a row. */
export interface RowText {
  readonly write: (row: ArrayRow) => string
  /** A cursor page's: a row's values of its sort keys, as its record has them. */
  readonly keys: ((row: ArrayRow) => JsonRecord) | undefined
}

/** Writers kept per field list at most: past this, they start over (sorts and `select` make many). */
const MAX_WRITERS = 100

/** The row writers of flat finds, kept per field list. One instance per plugin registration. */
export class RowTexts {
  readonly #text: JsonText
  /** Per field list, per the sort keys a cursor page reads: its writer, or `null` where there is none. */
  readonly #kept = new WeakMap<Field[], Map<string, RowText | null>>()

  constructor (text: JsonText) {
    this.#text = text
  }

  /**
   * The writer of the rows of a flat find of `fields` of `model` by `criteria`; `undefined` where
   * a field's type is not one the dialect writes.
   */
  of (model: Model, fields: Field[], { paging }: Criteria): RowText | undefined {
    let key = ''
    if (paging !== undefined) {
      key = `${paging.added.join(',')}>`
      for (const { target } of paging.sort) key += `${target.column},`
    }
    let byKey = this.#kept.get(fields)
    if (byKey === undefined) this.#kept.set(fields, byKey = new Map())
    let text = byKey.get(key)
    if (text === undefined) {
      /* c8 ignore next -- reached after 100 distinct cursor sorts of one field list, more than the tests ask for */
      if (byKey.size === MAX_WRITERS) byKey.clear()
      text = this.#build(model, fields, paging) ?? null
      byKey.set(key, text)
    }
    return text ?? undefined
  }

  #build (model: Model, fields: Field[], paging: Criteria['paging']): RowText | undefined {
    // The schema's order: the attributes, then the singular associations.
    const order = [...model.attributes.keys(), ...model.singulars.keys()]
    const answered = fields
      .map((field, index) => ({ field, index }))
      .filter(({ field }) => paging?.added.includes(field.name) !== true)
      .sort((a, b) => order.indexOf(a.field.name) - order.indexOf(b.field.name))
    const keys = (paging?.sort ?? []).map(({ target }) => {
      const index = fields.findIndex(field => field.column === target.column)
      return { name: target.name, field: fields[index], index }
    })
    const texts = new Map<Field, FieldText>()
    for (const { field } of [...answered, ...keys]) {
      const text = this.#text.field(field)
      if (text === undefined) return undefined
      texts.set(field, text)
    }
    const read = ({ field, index }: { field: Field, index: number }, as: 'json' | 'value', none: string): string =>
      `((v = row[${index}]) === null ? ${none} : ${(texts.get(field) as FieldText)[as]})`
    let body = ''
    for (const entry of answered) {
      const { name } = entry.field
      // A null as the schema has it: null where it allows null, else what the serializer writes.
      const attribute = model.attributes.get(name)
      const nullable = attribute === undefined
        ? (model.singulars.get(name) as SingularAssociation).nullable
        : attribute.nullable
      const none = nullable ? 'null' : (texts.get(entry.field) as FieldText).none
      body += ` + ${JSON.stringify(`${body === '' ? '' : ','}${JSON.stringify(name)}:`)} + ${
        read(entry, 'json', JSON.stringify(none))
      }`
    }
    // eslint-disable-next-line no-new-func -- generated from metadata, not from input
    const write = new Function('date', `return row => { let v; return '{'${body} + '}' }`)(
      this.#text.date
    ) as RowText['write']
    if (paging === undefined) return { write, keys: undefined }
    const values = keys.map(key => `${JSON.stringify(key.name)}: ${read(key, 'value', 'null')}`)
    // eslint-disable-next-line no-new-func -- generated from metadata, not from input
    return {
      write,
      keys: new Function('date', `return row => { let v; return { ${values.join(', ')} } }`)(
        this.#text.date
      ) as RowText['keys']
    }
  }
}
