/**
 * How blueprint routes check what arrives: their schemas are compiled with TypeBox, and nothing
 * is coerced (Fastify's Ajv would turn `{"fks": 7}` into `[7]` and `[[7]]` into `[7]`); create and
 * update bodies are only checked to be objects, their values being read by the action with coded
 * errors; JSON bodies and query strings must be valid UTF-8.
 *
 * @module
 */
import { isUtf8 } from 'node:buffer'
import type { FastifyInstance, FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify'
import type { TSchema } from 'typebox'
import { Compile } from 'typebox/compile'
import { BP_ERR_INVALID_ENCODING } from '../errors.ts'

/** A validator as Fastify calls it: on `false`, it formats `errors` (`body/fks must be array`). */
interface Validate {
  (data: unknown): boolean
  errors?: FastifySchemaValidationError[]
}

const NOT_AN_OBJECT: FastifySchemaValidationError[] = [{
  keyword: 'type',
  instancePath: '',
  schemaPath: '#/type',
  params: { type: 'object' },
  message: 'must be object'
}]

const anObject: Validate = Object.assign(
  (data: unknown): boolean => typeof data === 'object' && data !== null && !Array.isArray(data),
  { errors: NOT_AN_OBJECT }
)

/**
 * A query string's or a path's schema as its values arrive: text. The schemas document numbers,
 * integers and booleans (for OpenAPI and client generators); the route checks only the text's
 * shape (a single value or a repeated one), and the plugin reads the values itself, with coded
 * errors that name the parameter.
 */
function onTheWire (schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(onTheWire)
  if (typeof schema !== 'object' || schema === null) return schema
  const node = Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, onTheWire(value)]))
  if (node.type === 'integer' || node.type === 'number' || node.type === 'string' || node.type === 'boolean') {
    return { type: 'string' }
  }
  return node
}

/** The validator compiler of every blueprint route (Fastify's `validatorCompiler` route option). */
export const compileValidator: FastifySchemaCompiler<TSchema> = ({ schema, httpPart }) => {
  const validator = Compile(
    (httpPart === 'querystring' || httpPart === 'params' ? onTheWire(schema) : schema) as TSchema
  )
  const validate: Validate = data => {
    if (validator.Check(data)) return true
    validate.errors = validator.Errors(data)
    return false
  }
  return validate
}

const LONE_PERCENT = /%(?![0-9a-fA-F]{2})/g
// The escape of a byte from 0x80: only such escapes can be invalid UTF-8 (global, for lastIndex).
const HIGH_ESCAPE = /%[89a-fA-F][0-9a-fA-F]/g

/**
 * Refuses a query string whose percent-encoding is not UTF-8 (`?name=%C3%28`): the query parser
 * would keep such a value as its raw text (or, an app's own parser, turn it into U+FFFD). A query
 * whose escapes are all of ASCII bytes (`where=%7B%22name%22…`, most of them) always decodes, and
 * is not decoded here a second time.
 *
 * @throws BP_ERR_INVALID_ENCODING naming the first parameter at fault.
 */
export function checkQueryEncoding (url: string): void {
  const start = url.indexOf('?')
  if (start === -1) return
  HIGH_ESCAPE.lastIndex = start
  if (!HIGH_ESCAPE.test(url)) return
  for (const pair of url.slice(start + 1).split('&')) {
    try {
      // A `%` that starts no escape stays as it is (the query parser keeps it as text too).
      decodeURIComponent(pair.replace(LONE_PERCENT, '%25'))
    } catch {
      const name = pair.split('=')[0]
      let readable = name
      try {
        readable = decodeURIComponent(name.replace(LONE_PERCENT, '%25'))
      } catch {
        // The name itself is the invalid part: named as it was sent.
      }
      throw new BP_ERR_INVALID_ENCODING(readable)
    }
  }
}

type Poisoning = Parameters<FastifyInstance['getDefaultJsonParser']>

/**
 * Parses JSON bodies of the blueprint routes (in their own context) like Fastify's own parser,
 * with the app's prototype-poisoning settings, after checking that the bytes are UTF-8: invalid
 * bytes would otherwise become U+FFFD and be stored as such.
 */
export function parseJsonBodies (routes: FastifyInstance): void {
  // Fastify fills both settings with their defaults ('error'); its types call them optional.
  const { onProtoPoisoning, onConstructorPoisoning } = routes.initialConfig as {
    onProtoPoisoning: Poisoning[0]
    onConstructorPoisoning: Poisoning[1]
  }
  const parse = routes.getDefaultJsonParser(onProtoPoisoning, onConstructorPoisoning)
  routes.removeContentTypeParser('application/json')
  routes.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    if (!isUtf8(body as Buffer)) {
      done(new BP_ERR_INVALID_ENCODING('body'), undefined)
      return
    }
    parse(request, (body as Buffer).toString('utf8'), done)
  })
}

/**
 * The validator compiler of a route whose action checks and coerces the body's values itself
 * (`RouteSpec.body: 'read-by-action'`: create, update), with coded errors that name the
 * attribute: the body is only checked to be a JSON object; its schema still documents it.
 */
export const compileValidatorBodyReadByAction: FastifySchemaCompiler<TSchema> = route =>
  route.httpPart === 'body' ? anObject : compileValidator(route)
