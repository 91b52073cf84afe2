/**
 * The route table, in one place: for each blueprint action — the reads (find, findOne, populate),
 * the record writes (create, update, destroy) and the collection writes (add, replace, remove) —
 * its method, path, schemas and a thin handler that turns the request into an action call.
 *
 * @module
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Type, type TSchema } from 'typebox'
import { add } from '../actions/add.ts'
import { create } from '../actions/create.ts'
import { destroy } from '../actions/destroy.ts'
import { executeFind, type Found } from '../actions/find.ts'
import { findOne, findOneOf, findOneText, oneCriteria } from '../actions/find-one.ts'
import { populate } from '../actions/populate.ts'
import { remove } from '../actions/remove.ts'
import { replace } from '../actions/replace.ts'
import { update } from '../actions/update.ts'
import { parseFields, parseFind, parsePopulate, parseRelations, type QueryString } from '../criteria/parse.ts'
import type { BlueprintQuery } from '../criteria/types.ts'
import type { Bounds } from '../criteria/validate.ts'
import { BP_ERR_INVALID_ID, BP_ERR_INVALID_JSON, BP_ERR_PARAMETER_NOT_ALLOWED } from '../errors.ts'
import type { Association, CollectionAssociation } from '../models/model.ts'
import { describe } from '../models/values.ts'
import { bodySchema, childSchemaId, findOneQuery, findQuery, idParams, recordSchemaId } from '../models/schemas.ts'
import { checked, type RouteQuery } from './policy.ts'
import { checkQueryEncoding } from './validation.ts'
import type { RouteInput, RouteSpec } from './route-spec.ts'
import { routePath } from '../models/identity.ts'
import { ranQuery, serializeWith } from './carrier.ts'
import { answersText, sendJson } from './serialization.ts'
import { NestedSchemas } from './nested-schema.ts'
import { pageLinks } from './page-links.ts'
import { FindPlanner, type FindPlan } from './find-plan.ts'

/**
 * The error body every route documents for 4xx answers. Its fields are optional and further
 * fields are kept: a body that an app's hook or handler sends on a blueprint route (a policy's
 * `reply.code(403).send({ message })`) is serialised as it was sent, never turned into a 500.
 */
export const ERROR_SCHEMA = Type.Object({
  statusCode: Type.Optional(Type.Integer({ description: 'the HTTP status, repeated' })),
  code: Type.Optional(
    Type.String({ description: 'stable error code, e.g. BP_ERR_UNKNOWN_ATTRIBUTE (see docs/errors.md)' })
  ),
  error: Type.Optional(Type.String({ description: 'the HTTP reason phrase' })),
  message: Type.Optional(Type.String({ description: 'what is wrong, naming the parameter' }))
}, { $id: 'blueprints.error', title: 'Blueprint error', additionalProperties: true })

/** The response header of a find's total count (`count=true`), Platformatic's and PostgREST's name. */
export const TOTAL_COUNT = 'X-Total-Count'

const TOTAL_COUNT_SCHEMA = Type.Integer({
  minimum: 0,
  description: 'with count=true: how many records match `where` in all, whatever limit and skip'
})

/** The response header of a cursor page's neighbours (RFC 8288). */
export const LINK = 'Link'

const LINK_SCHEMA = Type.String({
  description:
    'with after or before (a cursor page): <url>; rel="next" and <url>; rel="prev", where there are such pages'
})

/** Reference to {@link ERROR_SCHEMA}. */
export const errorRef = Type.Ref('blueprints.error')

/**
 * `answer`, serialised with `flat` (records as their child schema: every association a raw key)
 * when the query populates nothing. The route's own schema lets a singular association be a key or
 * a record (`anyOf`), which fast-json-stringify can only tell apart by validating each value
 * against the record's schema; without population it is a key, always.
 */
function flatWhenBare<T> (
  reply: FastifyReply,
  query: BlueprintQuery,
  flat: TSchema,
  answer: T,
  deeper: NestedSchemas,
  bounds: Bounds
): T {
  if (query.populate === false) {
    reply.type('application/json; charset=utf-8').serializer(
      reply.compileSerializationSchema(flat as unknown as Record<string, unknown>, '200')
    )
  } else if (
    query.relations !== undefined || (Array.isArray(query.populate) && query.populate.some(path => path.includes('.')))
  ) {
    // Populated deeper than the record schemas describe (their children carry keys): a schema of
    // its own (docs/criteria.md#populate-deeper).
    serializeWith(reply.request, reply.type('application/json; charset=utf-8'), deeper.serializer(reply, query, bounds))
  }
  return answer
}

/**
 * Sends what a planned find found: a cursor page's neighbours in the `Link` header, the total in
 * `X-Total-Count` where the plan counts, and its JSON text as it is, or its records as the plan's
 * query populated them (see {@link flatWhenBare}).
 */
function sendFound (
  reply: FastifyReply,
  plan: FindPlan,
  found: Found,
  flat: TSchema,
  deeper: NestedSchemas,
  bounds: Bounds
): unknown {
  if (plan.criteria.paging !== undefined) linksOf(reply, found)
  if (plan.counted) reply.header(TOTAL_COUNT, String(found.total))
  if (found.json !== undefined) return sendJson(reply, found.json)
  return flatWhenBare(reply, plan.query, flat, found.records, deeper, bounds)
}

/** The `Link` header of a cursor page's next and previous pages (when it has either). */
function linksOf (reply: FastifyReply, page: { readonly next?: string, readonly prev?: string }): void {
  const links = pageLinks(reply.request.url, page)
  if (links !== undefined) reply.header(LINK, links)
}

function defaults (input: RouteInput): { limit: number, populateLimit: number } {
  return { limit: input.options.limits.defaultLimit, populateLimit: input.options.limits.populateLimit }
}

/** The routes of the read actions. */
export const READ_ROUTES: readonly RouteSpec[] = [
  {
    action: 'find',
    method: 'GET',
    per: 'model',
    url: model => routePath(model),
    schema: ({ model }) => ({
      querystring: findQuery(model, 'used'),
      response: {
        200: Type.Array(Type.Ref(recordSchemaId(model.identity)), {
          headers: { [TOTAL_COUNT]: TOTAL_COUNT_SCHEMA, [LINK]: LINK_SCHEMA }
        }),
        '4xx': errorRef
      }
    }),
    handler: input => {
      const flat = Type.Array(Type.Ref(childSchemaId(input.model.identity)))
      const deeper = new NestedSchemas(input.model, true)
      const planner = new FindPlanner(input)
      // Parse and plan (find-plan.ts), execute (`executeFind`), send.
      return async (request, reply, { policy, snapshot }) => {
        checkQueryEncoding(request.url)
        const planned = planner.plan(request, request.query as QueryString, policy)
        // Without a policy the plan is made at once: no await.
        const plan = planned instanceof Promise ? await planned : planned
        ranQuery(request, plan.query)
        return executeFind(input.ctx, input.model, plan, policy, snapshot).then(found =>
          sendFound(reply, plan, found, flat, deeper, input.ctx.bounds)
        )
      }
    }
  },
  {
    action: 'findOne',
    method: 'GET',
    per: 'model',
    url: model => routePath(model, true),
    schema: ({ model }) => ({
      params: idParams({ id: model.primaryKey }),
      querystring: findOneQuery,
      response: { 200: Type.Ref(recordSchemaId(model.identity)), '4xx': errorRef }
    }),
    handler: input => {
      const flat = Type.Ref(childSchemaId(input.model.identity))
      const deeper = new NestedSchemas(input.model, false)
      const bounds = input.ctx.bounds
      return async (request, reply, { policy, snapshot }) => {
        checkQueryEncoding(request.url)
        const raw = request.query as QueryString
        const query: BlueprintQuery = {
          where: {},
          limit: 1,
          skip: 0,
          sort: [],
          ...parseFields(raw),
          populate: parsePopulate(raw),
          populateLimit: input.options.limits.populateLimit,
          ...parseRelations(raw)
        }
        const id = (request.params as { id: string }).id
        if (policy === undefined) {
          const one = oneCriteria(input.ctx, input.model, id, query)
          // A flat record over HTTP: written straight from its row, where the dialect writes it.
          const written = answersText(input.text, request, query) ? findOneText(input.ctx, input.model, one) : undefined
          if (written !== undefined) return written.then(json => sendJson(reply, json))
          return flatWhenBare(
            reply,
            query,
            flat,
            findOneOf(input.ctx, input.model, one, undefined, snapshot),
            deeper,
            bounds
          )
        }
        const customised = await checked(input, request, query, { action: 'findOne', model: input.model }, policy)
        return flatWhenBare(
          reply,
          customised,
          flat,
          findOne(input.ctx, input.model, id, customised, policy, snapshot),
          deeper,
          bounds
        )
      }
    }
  },
  {
    action: 'populate',
    method: 'GET',
    per: 'association',
    url: (model, association) => routePath(model, true, association),
    schema: ({ model, association }) => {
      const target = association as Association
      const child = target.target
      const item = Type.Ref(childSchemaId(child.identity))
      return target.kind === 'collection'
        ? {
          params: idParams({ id: model.primaryKey }),
          querystring: findQuery(child, 'ignored'),
          response: { 200: Type.Array(item), '4xx': errorRef }
        }
        : {
          params: idParams({ id: model.primaryKey }),
          querystring: Type.Object({
            select: Type.Optional(Type.String()),
            omit: Type.Optional(Type.String())
          }),
          response: { 200: item, '4xx': errorRef }
        }
    },
    handler: input => {
      const association = input.association as Association
      const child = association.target
      const context: RouteQuery = {
        action: 'populate',
        model: child,
        parent: { model: input.model, association: association.name }
      }
      return async (request, _reply, { policy, snapshot }) => {
        checkQueryEncoding(request.url)
        const raw = request.query as QueryString
        let query: BlueprintQuery
        if (raw.count !== undefined) {
          throw new BP_ERR_PARAMETER_NOT_ALLOWED('count', 'only a find (GET /m) counts its records')
        }
        for (const name of ['after', 'before']) {
          if (raw[name] !== undefined) {
            throw new BP_ERR_PARAMETER_NOT_ALLOWED(
              name,
              'only a find (GET /m) pages by cursor; here, use limit and skip'
            )
          }
        }
        if (association.kind === 'collection') {
          // The children are answered as records of their own, nothing of theirs populated.
          if (raw.populate !== undefined && raw.populate !== 'false') {
            throw new BP_ERR_PARAMETER_NOT_ALLOWED(
              'populate',
              `the children of ${association.name} are answered without their associations ` +
                `(only populate=false); read them populated with GET /${child.identity}`
            )
          }
          query = parseFind(raw, child, defaults(input))
        } else {
          for (const name of ['limit', 'skip', 'sort']) {
            if (raw[name] !== undefined) {
              throw new BP_ERR_PARAMETER_NOT_ALLOWED(name, `${association.name} is a single record`)
            }
          }
          query = { where: {}, limit: 1, skip: 0, sort: [], ...parseFields(raw), populate: false, populateLimit: 0 }
        }
        const id = (request.params as { id: string }).id
        const checkedQuery = policy === undefined ? query : await checked(input, request, query, context, policy)
        return populate(input.ctx, input.model, association, id, checkedQuery, policy, snapshot)
      }
    }
  }
]

/** The answer of every write: the record (a collection write's: the parent), or an error. */
function answer (input: RouteInput): Record<string, unknown> {
  return { 200: Type.Ref(recordSchemaId(input.model.identity)), '4xx': errorRef }
}

// The record writes.

const UPDATE: RouteSpec = {
  action: 'update',
  method: 'PATCH',
  per: 'model',
  body: 'read-by-action',
  url: model => routePath(model, true),
  schema: input => ({
    params: idParams({ id: input.model.primaryKey }),
    body: bodySchema(input.model, 'update'),
    response: answer(input)
  }),
  handler: input => async (request, _reply, by) =>
    update(input.ctx, input.model, (request.params as { id: string }).id, request.body as Record<string, unknown>, by)
}

/** create, update (`PATCH`, and `PUT` as Sails binds it) and destroy. */
export const RECORD_ROUTES: readonly RouteSpec[] = [
  {
    action: 'create',
    method: 'POST',
    per: 'model',
    body: 'read-by-action',
    url: model => routePath(model),
    schema: input => ({ body: bodySchema(input.model, 'create'), response: answer(input) }),
    handler: input => async (request, _reply, by) =>
      create(input.ctx, input.model, request.body as Record<string, unknown>, by)
  },
  UPDATE,
  // Sails binds update to PUT too, and sails.io.js frontends call io.socket.put('/user/1', …).
  { ...UPDATE, method: 'PUT', alias: true },
  {
    action: 'destroy',
    method: 'DELETE',
    per: 'model',
    url: model => routePath(model, true),
    schema: input => ({ params: idParams({ id: input.model.primaryKey }), response: answer(input) }),
    handler: input => async (request, _reply, by) =>
      destroy(input.ctx, input.model, (request.params as { id: string }).id, by)
  }
]

// The collection writes.

const KEYS = Type.Array(Type.Union([Type.String(), Type.Number()]), {
  description: 'primary keys of the child records'
})

/**
 * Body of replace: `{ "fks": [...] }`, or the bare array that Sails 1.x clients send.
 */
export const REPLACE_BODY = Type.Union([Type.Object({ fks: KEYS }, { required: ['fks'] }), KEYS])

/** `:id` and `:fk` of add and remove: the parent's and the child's primary keys. */
function linkParams (input: RouteInput): TSchema {
  return idParams({ id: input.model.primaryKey, fk: (input.association as CollectionAssociation).target.primaryKey })
}

function ids (request: FastifyRequest): { id: string, fk: string } {
  return request.params as { id: string, fk: string }
}

/** add, replace and remove. */
export const COLLECTION_ROUTES: readonly RouteSpec[] = [
  {
    action: 'add',
    method: 'PUT',
    per: 'collection',
    url: (model, association) => routePath(model, true, association, '/:fk'),
    schema: input => ({ params: linkParams(input), response: answer(input) }),
    handler: input => async (request, _reply, by) =>
      add(input.ctx, input.model, input.association as CollectionAssociation, ids(request).id, ids(request).fk, by)
  },
  {
    action: 'replace',
    method: 'PUT',
    per: 'collection',
    url: (model, association) => routePath(model, true, association),
    schema: input => ({
      params: idParams({ id: input.model.primaryKey }),
      body: REPLACE_BODY,
      response: answer(input)
    }),
    handler: input => async (request, _reply, by) => {
      const body = request.body as { fks: Array<string | number> } | Array<string | number>
      return replace(
        input.ctx,
        input.model,
        input.association as CollectionAssociation,
        ids(request).id,
        Array.isArray(body) ? body : body.fks,
        by
      )
    }
  },
  {
    // Sails' development-only shortcut: replace through a GET, the ids as JSON in `?fks=`.
    action: 'replace',
    method: 'GET',
    per: 'collection',
    enabled: options => options.shortcuts,
    url: (model, association) => routePath(model, true, association, '/replace'),
    schema: input => ({
      params: idParams({ id: input.model.primaryKey }),
      querystring: Type.Object({ fks: Type.String({ description: 'JSON array of child primary keys' }) }, {
        required: ['fks']
      }),
      response: answer(input)
    }),
    handler: input => async (request, _reply, by) => {
      checkQueryEncoding(request.url)
      const text = (request.query as { fks: string }).fks
      let fks: unknown
      try {
        fks = JSON.parse(text)
      } catch (err) {
        throw new BP_ERR_INVALID_JSON('fks', (err as Error).message)
      }
      if (!Array.isArray(fks)) {
        throw new BP_ERR_INVALID_ID('fks', `must be a JSON array of primary keys, got ${describe(fks)}`)
      }
      return replace(input.ctx, input.model, input.association as CollectionAssociation, ids(request).id, fks, by)
    }
  },
  {
    action: 'remove',
    method: 'DELETE',
    per: 'collection',
    url: (model, association) => routePath(model, true, association, '/:fk'),
    schema: input => ({ params: linkParams(input), response: answer(input) }),
    handler: input => async (request, _reply, by) =>
      remove(input.ctx, input.model, input.association as CollectionAssociation, ids(request).id, ids(request).fk, by)
  }
]

/** Every blueprint route, in registration order. */
export const ROUTES: readonly RouteSpec[] = [...READ_ROUTES, ...RECORD_ROUTES, ...COLLECTION_ROUTES]
