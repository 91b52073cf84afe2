// The properties every answer of the fuzz test must have (docs/errors.md), as a list of problems
// (empty when the answer is fine), and the database snapshot that shows a write changed nothing.
import { STATUS_CODES } from 'node:http'
import type { MikroORM } from '@mikro-orm/core'

/** Words of PostgreSQL's, SQLite's and the drivers' own messages, never to reach a client. */
export const DRIVER_WORDING =
  /invalid byte sequence|syntax error|violates|relation "|SQLITE_|sqlite3|duplicate key|null value in column|out of range for type|invalid input syntax|operator does not exist|could not (identify|determine|convert)|constraint failed|no such (table|column)|SQLSTATE|integer out of range|value too long|numeric field overflow|bind message|prepared statement|too many (SQL )?variables|Expression tree is too large|string or blob too big|parser stack overflow/i

/** A SQLSTATE: five digits or upper-case letters (`22021`, `23505`, `42P01`). */
const SQLSTATE = /^[0-9A-Z]{5}$/

const ERROR_KEYS = new Set(['statusCode', 'code', 'error', 'message'])

/** Fastify's own answer when no route matches (docs/errors.md: a 404 without a code). */
function isRouteNotFound (status: number, body: Record<string, unknown>): boolean {
  return status === 404 && Object.keys(body).length === 3 && body.statusCode === 404 && body.error === 'Not Found' &&
    typeof body.message === 'string' && /^Route [A-Z]+:.* not found$/s.test(body.message)
}

/** Strings anywhere in a JSON value that look like a SQLSTATE under a `code`-like key. */
function sqlstates (value: unknown, found: string[] = []): string[] {
  if (Array.isArray(value)) { for (const item of value) sqlstates(item, found) }
  else if (typeof value === 'object' && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      if (/code|state/i.test(key) && typeof item === 'string' && SQLSTATE.test(item)) found.push(`${key}: ${item}`)
      sqlstates(item, found)
    }
  }
  return found
}

/**
 * What is wrong with an answer: a 5xx; a 4xx that is not the coded error body (`statusCode` equal
 * to the status, a non-empty `code`, `error` the reason phrase, a non-empty `message`, nothing
 * else); a SQLSTATE or driver wording in an error body; a body that is not JSON.
 */
export function answerProblems (status: number, body: unknown, text: string): string[] {
  const problems: string[] = []
  if (status >= 500) problems.push(`status ${status}`)
  if (status < 400) return problems
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    problems.push('the error body is not a JSON object')
    return problems
  }
  const error = body as Record<string, unknown>
  if (!isRouteNotFound(status, error)) {
    if (error.statusCode !== status) {
      problems.push(`statusCode ${JSON.stringify(error.statusCode)} is not the status ${status}`)
    }
    if (typeof error.code !== 'string' || error.code === '') problems.push('no code')
    else if (SQLSTATE.test(error.code)) problems.push(`a SQLSTATE as the code (${error.code})`)
    if (typeof error.error !== 'string') problems.push('no error')
    else if (error.error !== STATUS_CODES[status]) {
      problems.push(`error ${JSON.stringify(error.error)} is not the reason phrase of ${status}`)
    }
    if (typeof error.message !== 'string' || error.message === '') problems.push('no message')
    const extra = Object.keys(error).filter(key => !ERROR_KEYS.has(key))
    if (extra.length > 0) problems.push(`fields besides statusCode, code, error, message: ${extra.join(', ')}`)
  }
  const states = sqlstates(error)
  if (states.length > 0) problems.push(`SQLSTATE-like codes: ${states.join('; ')}`)
  const wording = DRIVER_WORDING.exec(text)
  if (wording !== null) problems.push(`driver wording: ${JSON.stringify(wording[0])}`)
  return problems
}

/** Parses a response body as JSON; `undefined` (with a problem) when it is not JSON. */
export function parseBody (text: string): { body: unknown, problem?: string } {
  if (text === '') return { body: null }
  try {
    return { body: JSON.parse(text) }
  } catch {
    return { body: undefined, problem: `the body is not JSON: ${text.slice(0, 200)}` }
  }
}

/**
 * Every row of every table (the link tables included, hidden columns included), as sorted JSON
 * lines: what a write that failed must leave exactly as it was.
 */
export async function snapshot (orm: MikroORM): Promise<string> {
  const connection = orm.em.getConnection()
  const tables = [
    ...new Set(
      [...orm.getMetadata().getAll().values()].map(meta => meta.tableName).filter((name): name is string =>
        typeof name === 'string'
      )
    )
  ].sort()
  const parts: string[] = []
  for (const table of tables) {
    const rows = await connection.execute(`select * from "${table}"`) as unknown[]
    parts.push(
      `${table}: ${
        rows.map(row =>
          JSON.stringify(row, (_key, value: unknown) => typeof value === 'bigint' ? String(value) : value)
        ).sort().join('\n')
      }`
    )
  }
  return parts.join('\n')
}

/** A short rendering of a value for a failure message. */
export function short (value: unknown, max = 400): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value))
  return text.length > max ? `${text.slice(0, max)}… (${text.length} chars)` : text
}
