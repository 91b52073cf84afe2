/**
 * Named statements whose rows the server has described once on a connection run without asking
 * again. `pg` sends a Describe with every execution of a statement, and the server answers each
 * with the rows' description (every column's name and type), which `pg` parses into its result's
 * fields and type parsers before the first row: work, bytes and a message on both sides that only
 * ever repeat the first answer. A named statement cannot change what it returns while it stays
 * prepared — the server refuses to execute it if its result's columns changed ("cached plan must
 * not change result type") — so the first description, kept per connection and statement name,
 * holds for every later execution of that statement on that connection; a new connection starts
 * with none.
 *
 * The query objects stay `pg`'s own (a subclass of the client's query class): `pg` binds the
 * values, parses the rows with the kept parsers and keeps its account of prepared statements.
 *
 * @module
 */

/** The part of `pg`'s protocol writer (its `Connection`) a query object writes to. */
export interface QueryWriter {
  parse (config: unknown): void
  bind (config: unknown): void
  describe (config: unknown): void
  execute (config: unknown): void
  sync (): void
  close (config: unknown): void
  /** Statements prepared on the connection, by name: their text. */
  readonly parsedStatements: Record<string, string>
  readonly submittedNamedStatements: Record<string, string>
}

/** `pg`'s result, as this module reads and fills it. */
interface PgResult {
  fields: unknown[]
  rows: unknown[]
  _parsers?: unknown[]
  _prebuiltEmptyResultObject?: object
  _types?: unknown
}

/** A `pg` query object, as this module drives it. */
export interface PgQuery {
  readonly name?: string
  readonly text: string
  callback?: unknown
  _result?: PgResult
  _accumulateRows?: unknown
  hasBeenParsed (connection: QueryWriter): unknown
  prepare (connection: QueryWriter): void
  handleRowDescription (message: unknown): void
  handleDataRow (message: unknown): void
  handleCommandComplete (message: unknown, connection: unknown): void
  handleReadyForQuery (connection: unknown): void
  handleError (err: Error, connection: unknown): void
  handleCopyInResponse (connection: unknown): void
}

/** `pg`'s query class (`Client.Query`). */
export type QueryClass = new (config: object | string, values?: unknown, callback?: (err: Error | null, result: unknown) => void) => PgQuery

/** What the server said a statement returns: no columns (it answered NoData) or these. */
interface Description {
  readonly fields: unknown[]
  readonly parsers: unknown[] | undefined
  readonly empty: object | undefined
}

/** Descriptions per connection (keyed by its record of prepared statements, which it owns), by statement name. */
const DESCRIPTIONS = new WeakMap<object, Map<string, Description>>()
/** Executions that asked for the description, and their connection's descriptions (a rare case: kept aside, not on every query object). */
const DESCRIBING = new WeakMap<PgQuery, Map<string, Description>>()
/** The subclass made for each `pg` query class. */
const CLASSES = new WeakMap<QueryClass, QueryClass>()
/**
 * A writer without its Describe message (the rows' description is known), for `pg`'s `prepare()`
 * of a statement that is prepared on the connection (so it sends no Parse): made for each such
 * execution, since one small object costs less than finding a kept one.
 */
class SilentWriter {
  readonly #writer: QueryWriter
  constructor (writer: QueryWriter) { this.#writer = writer }
  bind (config: unknown): void { this.#writer.bind(config) }
  describe (): void {}
  execute (config: unknown): void { this.#writer.execute(config) }
  sync (): void { this.#writer.sync() }
  close (config: unknown): void { this.#writer.close(config) }
  get parsedStatements (): Record<string, string> { return this.#writer.parsedStatements }
}

/** Whether `Query` is a `pg` query class with the parts this module relies on. */
function describable (Query: QueryClass): boolean {
  const proto = Query.prototype as Partial<PgQuery> & { _getRows?: unknown }
  if (typeof proto.prepare !== 'function' || typeof proto.hasBeenParsed !== 'function' || typeof proto._getRows !== 'function') return false
  const result = new Query({ text: '' })._result as Partial<PgResult> & { addFields?: unknown, parseRow?: unknown } | undefined
  return typeof result?.addFields === 'function' && typeof result.parseRow === 'function' && Array.isArray(result.fields)
}

/**
 * `Query` (a `pg` client's query class) with the rows' description of a named statement kept per
 * connection after its first execution, and not asked for again; `Query` itself when it lacks the
 * parts this relies on (another driver, a `pg` whose internals changed).
 */
export function describedQueries (Query: QueryClass): QueryClass {
  let Described = CLASSES.get(Query)
  if (Described === undefined) {
    Described = describable(Query) ? describedClass(Query) : Query
    CLASSES.set(Query, Described)
  }
  return Described
}

function describedClass (Query: QueryClass): QueryClass {
  return class DescribedQuery extends Query {
    /** The rows as the texts the server sent, unparsed (`texts` in the config; see json-text.ts). */
    readonly #texts: boolean

    constructor (config: object | string, values?: unknown, callback?: (err: Error | null, result: unknown) => void) {
      super(config, values, callback)
      this.#texts = (config as { texts?: unknown }).texts === true
    }

    handleDataRow (message: unknown): void {
      if (!this.#texts) {
        super.handleDataRow(message)
        return
      }
      // `pg`'s own step but the parsing, which is all that can cancel a query's rows, and the
      // 'row' event: these queries are the pool's, with a callback, and nothing listens to rows.
      ;(this._result as PgResult).rows.push((message as { fields: unknown[] }).fields)
    }

    prepare (connection: QueryWriter): void {
      const name = this.name
      if (name === undefined || name === '') {
        super.prepare(connection)
        return
      }
      const statements = connection.parsedStatements
      let known = DESCRIPTIONS.get(statements)
      if (known === undefined) DESCRIPTIONS.set(statements, known = new Map())
      // Kept only once the server described the statement, so it is prepared on the connection,
      // and under this name with this text (names are the pool's, one per text: see
      // postgres-statements.ts).
      const description = known.get(name)
      if (description === undefined) {
        DESCRIBING.set(this, known)
        super.prepare(connection)
        return
      }
      // What `pg` sets from a description, before the first row.
      const result = this._result as PgResult
      result.fields = description.fields
      result._parsers = description.parsers
      result._prebuiltEmptyResultObject = description.empty
      this._accumulateRows = true
      super.prepare(new SilentWriter(connection) as unknown as QueryWriter)
    }

    handleRowDescription (message: unknown): void {
      super.handleRowDescription(message)
      const known = DESCRIBING.get(this)
      if (known === undefined) return
      DESCRIBING.delete(this)
      const result = this._result as PgResult
      known.set(this.name as string, { fields: result.fields, parsers: result._parsers, empty: result._prebuiltEmptyResultObject })
    }

    handleCommandComplete (message: unknown, connection: unknown): void {
      // Described, and no description came: the statement returns no rows (NoData).
      const known = DESCRIBING.get(this)
      if (known !== undefined) {
        DESCRIBING.delete(this)
        known.set(this.name as string, { fields: [], parsers: undefined, empty: undefined })
      }
      super.handleCommandComplete(message, connection)
    }
  }
}
