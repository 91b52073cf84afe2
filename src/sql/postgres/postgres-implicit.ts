/**
 * A write's transaction as an implicit transaction of PostgreSQL's extended query protocol: the
 * statements the server receives before a Sync run as one transaction, which the Sync commits (or,
 * after an error, rolls back). So a write needs neither BEGIN nor COMMIT, and each of its round
 * trips ends with a Flush (the server sends what it has) rather than a Sync per statement, as
 * `pg` otherwise sends. The transaction is one query object of `pg`'s client (a "submittable")
 * from its first statement to the Sync: each statement is a `pg` query object of the client's own
 * class whose messages this module writes, with a Flush for a Sync, and whose answer it hands on,
 * so that `pg` itself binds the values, parses the rows (with the client's type parsers) and keeps
 * its account of the statements prepared on the connection.
 *
 * What never goes out inside: a simple-protocol query (the server would commit at its end) —
 * BEGIN, COMMIT and ROLLBACK are sent as extended statements too. A statement that fails aborts
 * the transaction: the server skips everything up to the Sync, which this module sends at once;
 * the statements issued behind it fail with the same error. Rolling back without a failure sends
 * BEGIN and ROLLBACK (ROLLBACK alone, outside an explicit block, works but warns). The ORM's entity
 * manager, if a write needs it (`context()`), gets an explicit block: BEGIN first, COMMIT at the end.
 *
 * @module
 */
import type { QueryConfig, QueryRunner } from '../driver.ts'
import type { OpenTransaction } from '../transactions.ts'
import { describedQueries, type PgQuery, type QueryClass, type QueryWriter } from './postgres-described.ts'
import { turnWriter, type Corkable } from './postgres-turns.ts'

/** The part of `pg`'s protocol writer (its `Connection`) this module uses. */
interface Wire extends QueryWriter {
  flush (): void
  on (event: 'parseComplete', listener: () => void): unknown
  removeListener (event: 'parseComplete', listener: () => void): unknown
  stream?: Corkable
}

/** What an implicit transaction needs of a `pg` client: its query class and its protocol writer. */
export interface ImplicitCapable {
  readonly connection: Wire
  /** `pg`'s per-client type parsers (what `client.query()` gives its queries). */
  readonly _types?: unknown
  pipeline?: boolean
  query (submittable: object): unknown
}

/** A write's transaction on `client`; `release()` says whether its connection broke (then the pool drops it). */
export function implicitTransaction (
  client: ImplicitCapable, kysely: (lent: { query: (...args: unknown[]) => Promise<unknown> }) => unknown
): OpenTransaction & { release (): Error | undefined } {
  const transaction = new ImplicitTransaction(client)
  let context: unknown
  return {
    runner: { query: (config: QueryConfig | string, values?: unknown) => transaction.query(config, values) } as unknown as QueryRunner,
    commit: async () => { await transaction.end(true) },
    rollback: async () => { await transaction.end(false) },
    context: () => {
      if (context === undefined) {
        transaction.explicit()
        context = kysely({ query: (config, values) => transaction.query(config as QueryConfig | string, values) })
      }
      return context
    },
    release: () => transaction.release()
  }
}

/** Whether an error is the server's answer to a statement (the connection is fine). */
function fromServer (err: Error): boolean {
  // FATAL and PANIC end the session: the connection is gone.
  return (err as { severity?: unknown }).severity === 'ERROR'
}

/** The submittable: one implicit transaction on one client. */
class ImplicitTransaction {
  readonly #client: ImplicitCapable
  readonly #Query: QueryClass
  readonly #mode: boolean | undefined
  /** The protocol writer, once `pg` submitted the transaction (it does at once on an idle client). */
  #connection: Wire | undefined
  /** Writes waiting for the submission. */
  #waiting: Array<() => void> | undefined = []
  /** `#connection` with a Flush for each Sync and no Close (see the constructor). */
  readonly #wire: QueryWriter
  /** Statements issued whose answer has not come, in order. */
  #sent: PgQuery[] = []
  /** Statements whose Parse went out and whose ParseComplete has not come, in order. */
  readonly #parses: PgQuery[] = []
  /** Called before each write once submitted (see postgres-turns.ts); the turn's end sends a Flush. */
  #turn: (() => void) | undefined
  /** A statement written this turn awaits its answers (a Sync would send them by itself). */
  #flush = false
  /** `pg` could not bind the values of the statement it was writing. */
  #unbound = false
  /** Sent BEGIN (for the entity manager): the Sync no longer commits, COMMIT does. */
  #explicit = false
  /** The Sync that ends the transaction was issued. */
  #synced = false
  #failure: Error | undefined
  #broken: Error | undefined
  #listening = false
  /**
   * Set by `pg` when its `query_timeout` applies (the whole transaction is one query to it):
   * called at the end, which clears its timer.
   */
  callback: ((err: Error | null) => void) | undefined
  /** The pending end: a commit or a rollback. */
  #end: { readonly commit: boolean, readonly resolve: () => void, readonly reject: (err: Error) => void } | undefined
  readonly #parsed = (): void => {
    const query = this.#parses.shift()
    const connection = this.#connection as Wire
    if (query?.name !== undefined && query.name !== '') {
      connection.parsedStatements[query.name] = query.text
      delete connection.submittedNamedStatements[query.name]
    }
  }

  constructor (client: ImplicitCapable) {
    this.#client = client
    this.#Query = describedQueries((client.constructor as unknown as { Query: QueryClass }).Query)
    this.#mode = client.pipeline
    const wire = (): Wire => this.#connection as Wire
    this.#wire = {
      parse: config => { wire().parse(config) },
      bind: config => { wire().bind(config) },
      describe: config => { wire().describe(config) },
      execute: config => { wire().execute(config) },
      // The end of the turn's writes sends one Flush for them all (see #write).
      sync: () => { this.#flush = true },
      // `pg` closes a statement whose values it could not bind, and sends a Sync: neither goes
      // out (the Sync would commit); the statement fails, and the caller rolls back.
      close: () => { this.#unbound = true },
      get parsedStatements () { return wire().parsedStatements },
      get submittedNamedStatements () { return wire().submittedNamedStatements }
    }
    // Not pipelined: `pg` hands this submittable every message until the Sync's ReadyForQuery.
    client.pipeline = false
    client.query(this)
  }

  /** Sends a statement; resolves with `pg`'s result. */
  query (config: QueryConfig | string, values?: unknown): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const query = new this.#Query(config, values, (err, result) => { if (err === null) resolve(result); else reject(err) })
      if (query._result !== undefined && query._result._types === undefined) query._result._types = this.#client._types
      if (this.#failure !== undefined) reject(this.#failure)
      else if (this.#synced) reject(new Error('fastify-blueprints: a statement was issued after its transaction ended'))
      else {
        this.#sent.push(query)
        this.#write(() => { this.#prepare(query) })
      }
    })
  }

  /** Converts the transaction into an explicit block (for the entity manager: see the module). */
  explicit (): void {
    this.#explicit = true
    this.query('BEGIN').catch(() => {})
  }

  /**
   * Ends the transaction: commits (`commit`) or rolls back. Resolves once the server answered the
   * Sync; a commit rejects if a statement failed (with its error) or the commit did; a rollback
   * rejects only if the connection broke.
   */
  async end (commit: boolean): Promise<void> {
    if (this.#failure !== undefined) {
      if (commit) throw this.#failure
      if (this.#broken !== undefined) throw this.#broken
      return
    }
    if (this.#synced) throw new Error('fastify-blueprints: the transaction has ended')
    const done = new Promise<void>((resolve, reject) => { this.#end = { commit, resolve, reject } })
    if (commit) {
      if (this.#explicit) this.query('COMMIT').catch(() => {})
    } else {
      if (!this.#explicit) this.query('BEGIN').catch(() => {})
      this.query('ROLLBACK').catch(() => {})
    }
    this.#synced = true
    this.#write(() => { (this.#connection as Wire).sync() })
    await done
  }

  /** Gives the client back its mode; returns the error that broke its connection, if one did. */
  release (): Error | undefined {
    this.#close()
    this.#client.pipeline = this.#mode
    return this.#broken
  }

  /** Writes, corked until the end of the turn (statements issued together go out in one write). */
  #write (action: () => void): void {
    if (this.#waiting !== undefined) {
      this.#waiting.push(action)
      return
    }
    ;(this.#turn as () => void)()
    action()
  }

  #prepare (query: PgQuery): void {
    const connection = this.#connection as Wire
    const parsed = query.hasBeenParsed(connection)
    if (typeof parsed !== 'string' || parsed === '') this.#parses.push(query)
    query.prepare(this.#wire)
    if (this.#unbound) {
      // `pg` failed the statement itself; the server gets nothing of it but its Parse.
      this.#unbound = false
      this.#sent = this.#sent.filter(other => other !== query)
    }
  }

  /** The transaction's messages are done: `pg`'s account of its prepared statements is the server's. */
  #close (): void {
    const connection = this.#connection
    if (connection === undefined || !this.#listening) return
    this.#listening = false
    connection.removeListener('parseComplete', this.#parsed)
    for (const query of this.#parses.splice(0)) {
      if (query.name !== undefined && query.name !== '') delete connection.submittedNamedStatements[query.name]
    }
  }

  /** Tells `pg`'s timer, if it set one, that the transaction's query is over. */
  #done (err: Error | null): void {
    const callback = this.callback
    this.callback = undefined
    callback?.(err)
  }

  // `pg`'s submittable interface: `pg` calls these with the server's messages.

  submit (connection: Wire): null {
    this.#connection = connection
    this.#turn = turnWriter(connection.stream, () => {
      if (this.#flush && !this.#synced) connection.flush()
      this.#flush = false
    })
    connection.on('parseComplete', this.#parsed)
    this.#listening = true
    const waiting = this.#waiting as Array<() => void>
    this.#waiting = undefined
    for (const action of waiting) this.#write(action)
    return null
  }

  handleRowDescription (message: unknown): void {
    this.#sent[0].handleRowDescription(message)
  }

  handleDataRow (message: unknown): void {
    this.#sent[0].handleDataRow(message)
  }

  handleCommandComplete (message: unknown, connection: Wire): void {
    const query = this.#sent.shift() as PgQuery
    query.handleCommandComplete(message, connection)
    query.handleReadyForQuery(connection)
  }

  handleEmptyQuery (connection: Wire): void {
    (this.#sent.shift() as PgQuery).handleReadyForQuery(connection)
  }

  handleCopyInResponse (connection: Wire): void {
    this.#sent[0].handleCopyInResponse(connection)
  }

  handleCopyData (): void {}

  handleError (err: Error, connection: Wire): void {
    this.#failure ??= err
    if (!fromServer(err)) this.#broken ??= err
    const failed = this.#sent
    this.#sent = []
    for (const query of failed) query.handleError(err, connection)
    // No more messages come to this submittable: `pg` dropped it.
    this.#close()
    this.#done(err)
    if (!this.#synced && this.#broken === undefined) {
      // The server skips what follows up to a Sync, which rolls the transaction back.
      this.#synced = true
      this.#write(() => { (this.#connection as Wire).sync() })
    }
    const end = this.#end
    this.#end = undefined
    if (end === undefined) return
    if (this.#broken !== undefined) end.reject(this.#broken)
    else if (end.commit) end.reject(err)
    // Rolled back: by the Sync, which went out with the ROLLBACK the error made the server skip.
    else end.resolve()
  }

  handleReadyForQuery (): void {
    this.#close()
    this.#done(null)
    const end = this.#end
    this.#end = undefined
    end?.resolve()
  }
}
