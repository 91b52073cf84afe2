/**
 * Every option of `app.register(blueprints, options)` as one TypeBox schema, compiled once, and
 * the message of the first problem of options that fail it: the option's path, what it must be
 * (each schema's `description`), or, for an unknown key, the known ones that come close.
 *
 * The schema's static type is the public option types' (`Static<typeof OPTIONS>` is
 * `BlueprintsOptions`, checked by test/types/options.tst.ts): an option added, removed or retyped
 * on one side only fails the type tests. What TypeBox cannot see (a refinement's type, keys made
 * from a list) is stated with {@link typed}.
 *
 * @module
 */
import type { MikroORM } from '@mikro-orm/core'
import type { FastifyRequest } from 'fastify'
import { Type, type Static, type TSchema, type TUnsafe } from 'typebox'
import { Compile } from 'typebox/compile'
import { didYouMean } from './did-you-mean.ts'
import type { Broker } from './realtime/brokers/broker.ts'
import type { Authorize } from './realtime/hub/hub.ts'
import type { Audience } from './realtime/options.ts'
import type { MeterLike } from './metrics.ts'
import {
  ACTIONS,
  HOOK_NAMES,
  type BlueprintAction,
  type ParseBlueprintOptions,
  type RouteHooks
} from './routes/route-options.ts'

const isFunction = (value: unknown): boolean => typeof value === 'function'

/** What the `metrics.meter` option must have: the methods of OpenTelemetry's `Meter` the plugin calls. */
const METER_METHODS = ['createObservableGauge', 'createObservableCounter', 'createHistogram'] as const

/** `schema`, with `T` as its static type: what its refinement or its computed keys check. */
function typed<T> (schema: TSchema): TUnsafe<T> {
  return schema as TUnsafe<T>
}

/** `schema` with a static type whose keys are readonly, as the public option types have them. */
function readonly<S extends TSchema> (schema: S): TUnsafe<Readonly<Static<S>>> {
  return schema as unknown as TUnsafe<Readonly<Static<S>>>
}

/** A value that `check` accepts, `what` it must be otherwise (the schema's description too). */
function refined<T> (check: (value: unknown) => boolean, what: string | ((value: unknown) => string)): TUnsafe<T> {
  const description = typeof what === 'string' ? what : what(undefined)
  return typed<T>(Type.Refine(Type.Unknown({ description }), check, typeof what === 'string' ? () => what : what))
}

function fn<T> (): TUnsafe<T> {
  return refined<T>(isFunction, 'must be a function')
}

/** A whole number from `min` up (and Infinity where `infinite`). */
function count (min: number, infinite = false): TUnsafe<number> {
  const check = (value: unknown): boolean =>
    (infinite && value === Infinity) || (Number.isSafeInteger(value) && (value as number) >= min)
  return refined<number>(check, `must be a whole number from ${min} up${infinite ? ', or Infinity' : ''}`)
}

const HOOKS = typed<RouteHooks>(Type.Object(
  Object.fromEntries(
    HOOK_NAMES.map(
      name => [
        name,
        Type.Optional(Type.Union([fn(), Type.Array(fn())], {
          description: 'must be a function or an ' +
            'array of functions'
        }))
      ]
    )
  ),
  { additionalProperties: false, description: 'must be an object of Fastify hooks' }
))

const ACTION = Type.Union([
  Type.Literal(false),
  readonly(Type.Object({ hooks: Type.Optional(HOOKS) }, { additionalProperties: false }))
], { description: 'must be false or an object' })

const MODEL = readonly(Type.Object({
  identity: Type.Optional(Type.String({ description: 'must be a string' })),
  expose: Type.Optional(Type.Boolean({ description: 'must be a boolean' })),
  hooks: Type.Optional(HOOKS),
  actions: Type.Optional(typed<Partial<Record<BlueprintAction, Static<typeof ACTION>>>>(Type.Object(
    Object.fromEntries(ACTIONS.map(action => [action, Type.Optional(ACTION)])),
    { additionalProperties: false, description: 'must be an object keyed by action', unknown: 'action' }
  )))
}, { additionalProperties: false, description: 'must be an object' }))

const REALTIME = Type.Union([
  Type.Boolean(),
  readonly(Type.Object({
    path: Type.Optional(
      Type.Union([Type.String({ pattern: '^/' }), Type.Literal(false)], {
        description: 'must start with / (or be false)'
      })
    ),
    broker: Type.Optional(refined<Broker>(
      value =>
        isFunction((value as { publish?: unknown } | null)?.publish) &&
        isFunction((value as { subscribe?: unknown }).subscribe),
      'must have publish() and subscribe()'
    )),
    context: Type.Optional(fn<(request: FastifyRequest) => unknown>()),
    audience: Type.Optional(fn<Audience>()),
    // It runs for every recipient of every notification: a promise would never be a yes.
    authorize: Type.Optional(refined<Authorize>(
      value => isFunction(value) && Object.prototype.toString.call(value) !== '[object AsyncFunction]',
      value =>
        isFunction(value)
          ? 'must be synchronous: it runs for every recipient of every notification, and a promise would ' +
            'never be a yes (decide from socket.context, computed once by the `realtime.context` option)'
          : 'must be a function'
    )),
    hooks: Type.Optional(HOOKS),
    // Checked as origins by realtime/origins.ts.
    onlyAllowOrigins: Type.Optional(typed<readonly string[] | '*'>(Type.Unknown())),
    maxPayload: Type.Optional(count(1)),
    maxPending: Type.Optional(count(1)),
    maxSubscriptions: Type.Optional(count(0)),
    maxFollows: Type.Optional(count(0)),
    maxQueries: Type.Optional(count(0)),
    maxFollowRecords: Type.Optional(count(0, true)),
    maxQueryRecords: Type.Optional(count(0, true)),
    followGrace: Type.Optional(count(0)),
    maxBufferedBytes: Type.Optional(count(1)),
    pingInterval: Type.Optional(count(0)),
    sailsIo: Type.Optional(Type.Union([
      Type.Boolean(),
      readonly(Type.Object({
        path: Type.Optional(Type.String({ pattern: '^/.*[^/]$', description: 'must start with / and not end with /' }))
      }, { additionalProperties: false, description: 'must be an object' }))
    ], { description: 'must be a boolean or an object' })),
    log: Type.Optional(Type.Union([
      Type.Boolean(),
      readonly(Type.Object({
        table: Type.Optional(
          Type.String({
            pattern: '^[A-Za-z_][A-Za-z0-9_]{0,56}$',
            description: 'must be letters, digits and _, not start with a digit, ' +
              'and be at most 57 characters'
          })
        ),
        create: Type.Optional(Type.Boolean({ description: 'must be a boolean' })),
        maxEntries: Type.Optional(count(1)),
        maxAge: Type.Optional(count(1)),
        poll: Type.Optional(count(0))
      }, { additionalProperties: false, description: 'must be an object' }))
    ], { description: 'must be a boolean or an object' }))
  }, { additionalProperties: false, description: 'must be an object' }))
], { description: 'must be a boolean or an object' })

const LIMITS = readonly(Type.Object({
  defaultLimit: Type.Optional(count(0, true)),
  maxLimit: Type.Optional(count(0, true)),
  populateLimit: Type.Optional(count(0, true)),
  maxValues: Type.Optional(count(1)),
  maxConstraints: Type.Optional(count(1)),
  maxDepth: Type.Optional(count(1)),
  maxRelationDepth: Type.Optional(count(0)),
  maxJsonDepth: Type.Optional(count(1)),
  maxPatternLength: Type.Optional(count(1)),
  maxWeight: Type.Optional(count(1, true)),
  maxRecords: Type.Optional(count(1, true)),
  statementTimeout: Type.Optional(count(1, true))
}, { additionalProperties: false, description: 'must be an object' }))

/** The plugin's options. */
export const OPTIONS = readonly(Type.Object({
  orm: refined<MikroORM>(
    value =>
      isFunction((value as { getMetadata?: unknown } | null)?.getMetadata) &&
      isFunction((value as { em?: { fork?: unknown } } | null)?.em?.fork),
    'must be an initialised MikroORM instance'
  ),
  prefix: Type.Optional(
    Type.String({ pattern: '^(|/.*[^/])$', description: 'must be empty or start with / and not end with /' })
  ),
  realtime: Type.Optional(REALTIME),
  openapi: Type.Optional(Type.Union([
    Type.Boolean(),
    readonly(Type.Object({
      info: Type.Optional(readonly(Type.Object(
        { title: Type.String(), version: Type.String(), description: Type.Optional(Type.String()) },
        { additionalProperties: false, description: 'must be { title, version, description? }' }
      )))
    }, { additionalProperties: false, description: 'must be an object' }))
  ], { description: 'must be a boolean or an object' })),
  // Deprecated (BP_DEP_001): `limits.defaultLimit`, `limits.maxLimit`, `limits.populateLimit`.
  defaultLimit: Type.Optional(count(0, true)),
  maxLimit: Type.Optional(count(0, true)),
  populateLimit: Type.Optional(count(0, true)),
  caseInsensitive: Type.Optional(Type.Boolean({ description: 'must be a boolean' })),
  shortcuts: Type.Optional(Type.Boolean({ description: 'must be a boolean' })),
  textFinds: Type.Optional(Type.Boolean({ description: 'must be a boolean' })),
  hooks: Type.Optional(HOOKS),
  models: Type.Optional(
    readonly(Type.Record(Type.String(), MODEL, { description: 'must be an object keyed by entity name' }))
  ),
  parseBlueprintOptions: Type.Optional(fn<ParseBlueprintOptions>()),
  limits: Type.Optional(LIMITS),
  metrics: Type.Optional(readonly(Type.Object({
    meter: refined<MeterLike>(
      value => METER_METHODS.every(name => isFunction((value as Record<string, unknown> | null)?.[name])),
      'must be an OpenTelemetry Meter (metrics.getMeter() of @opentelemetry/api)'
    )
  }, { additionalProperties: false, description: 'must be { meter }' })))
}, { additionalProperties: false, description: 'must be an object' }))

const validator = Compile(OPTIONS)

/** A schema as this module walks it (every one here has a description). */
interface Node {
  readonly description: string
  readonly unknown?: string
  readonly properties?: Record<string, Node>
  readonly patternProperties?: Record<string, Node>
  readonly anyOf?: Node[]
}

/** The first problem of `options` (undefined when they are valid), naming the option's path. */
export function optionProblem (options: unknown): string | undefined {
  if (validator.Check(options)) return undefined
  // The deepest error is the most precise one (a union reports each branch, then itself).
  let chosen: { keyword: string, instancePath: string, params: Record<string, unknown>, message: string } | undefined
  for (const error of validator.Errors(options) as Array<NonNullable<typeof chosen>>) {
    if (chosen === undefined || depth(error.instancePath) > depth(chosen.instancePath)) chosen = error
  }
  const { keyword, instancePath, params, message } = chosen as NonNullable<typeof chosen>
  const segments = instancePath.split('/').slice(1).map(segment => segment.replace(/~1/g, '/').replace(/~0/g, '~'))
  if (keyword === 'required') segments.push((params.requiredProperties as string[])[0])
  let node = OPTIONS as unknown as Node
  const path: string[] = []
  for (const segment of segments) {
    const object = node.properties !== undefined || node.patternProperties !== undefined
      ? node
      : node.anyOf?.find(branch => branch.properties !== undefined)
    if (object === undefined) break
    const next = object.properties?.[segment] ?? Object.values(object.patternProperties ?? {})[0]
    if (next === undefined) {
      const known = Object.keys(object.properties as Record<string, Node>)
      return `unknown ${object.unknown ?? 'option'} \`${[...path, segment].join('.')}\`${didYouMean(segment, known)}`
    }
    node = next
    path.push(segment)
  }
  // A refinement says what failed; any other check, what the option must be.
  return `\`${path.join('.')}\` ${keyword === '~refine' ? message : node.description}`
}

function depth (pointer: string): number {
  return pointer === '' ? 0 : pointer.split('/').length
}
