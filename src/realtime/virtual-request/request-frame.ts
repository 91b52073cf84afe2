/**
 * Request frames checked by a compiled TypeBox schema (the shape `RequestFrame` of protocol.ts
 * describes), and the first problem of a frame that fails it, said the way the 400 error frame
 * says it. Server side only: the client builds frames, it does not check them.
 *
 * @module
 */
import { Type } from 'typebox'
import { Compile } from 'typebox/compile'
import { METHODS } from '../../protocol.ts'

/** An HTTP header name (RFC 9110 token). */
const TOKEN = "^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$"
/** An HTTP header value as Node accepts it: tab, visible ASCII, space, and bytes from 0x80 (Latin-1). */
const HEADER_VALUE = '^[\\t\\x20-\\x7e\\x80-\\xff]*$'

/**
 * A request frame, client → server. Header names and values are what Node's HTTP parser would
 * accept on the wire, so the app's hooks see no header that an HTTP request could not carry.
 */
export const REQUEST_FRAME = Type.Object({
  id: Type.Union([Type.String(), Type.Number()]),
  method: Type.Union([...METHODS].map(method => Type.Literal(method))),
  // No control character (CR, LF, NUL, the other C0 ones, DEL): an HTTP request line cannot hold
  // them, and a url that held them could split what a log or an inner request makes of it.
  url: Type.String({ pattern: '^/(?!/)[^\\x00-\\x1f\\x7f]*$' }),
  body: Type.Optional(Type.Unknown()),
  headers: Type.Optional(
    Type.Record(Type.String({ pattern: TOKEN }), Type.String({ pattern: HEADER_VALUE }), {
      additionalProperties: false
    })
  )
})

const validator = Compile(REQUEST_FRAME)

/** What each field must be, as the error frame says it. */
const FIELDS: Record<string, string> = {
  id: '`id` must be a string or a finite number',
  method: `\`method\` must be one of ${[...METHODS].join(', ')}`,
  url: '`url` must be a path starting with a single / and without control characters (CR, LF, NUL …)',
  headers: '`headers` must be an object'
}

/** Why a frame is not a request (the message of the 400 error frame), or undefined when it is one. */
export function frameProblem (frame: unknown): string | undefined {
  if (validator.Check(frame)) return undefined
  const [error] = validator.Errors(frame)
  const { keyword, instancePath, params } = error as {
    keyword: string
    instancePath: string
    params: Record<string, unknown>
  }
  if (instancePath === '') {
    if (keyword === 'required') return FIELDS[(params.requiredProperties as string[])[0]]
    return 'a frame must be a JSON object'
  }
  const [, field, ...rest] = instancePath.split('/')
  if (field !== 'headers' || rest.length === 0) return FIELDS[field]
  // A header: its name is the rest of the pointer, unescaped (RFC 6901).
  const name = rest.join('/').replace(/~1/g, '/').replace(/~0/g, '~')
  if (keyword === 'boolean') return `header name ${JSON.stringify(name)} is not an HTTP token`
  if (keyword === 'type') return `header \`${name}\` must be a string`
  return `header \`${name}\` holds a character that an HTTP header cannot (a control character such as CR, LF or NUL, or one beyond U+00FF)`
}
