/**
 * Routes of the collection actions: add, replace and remove, one set per collection.
 *
 * @module
 */
import type { FastifyRequest } from 'fastify'
import { Type, type TSchema } from 'typebox'
import { add } from '../actions/add.ts'
import { remove } from '../actions/remove.ts'
import { replace } from '../actions/replace.ts'
import { BP_ERR_INVALID_ID, BP_ERR_INVALID_JSON } from '../errors.ts'
import type { CollectionAssociation } from '../models/model.ts'
import { describe } from '../models/values.ts'
import { idParams, recordSchemaId } from '../models/schemas.ts'
import type { RouteInput, RouteSpec } from './route-spec.ts'
import { checkQueryEncoding } from './validation.ts'
import { routePath } from '../models/identity.ts'

const KEYS = Type.Array(Type.Union([Type.String(), Type.Number()]), { description: 'primary keys of the child records' })

/**
 * Body of replace: `{ "fks": [...] }`, or the bare array that Sails 1.x clients send.
 */
export const REPLACE_BODY = Type.Union([Type.Object({ fks: KEYS }, { required: ['fks'] }), KEYS])

function answer (input: RouteInput): Record<string, unknown> {
  return { 200: Type.Ref(recordSchemaId(input.model.identity)), '4xx': Type.Ref('blueprints.error') }
}

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
    schema: input => ({ params: idParams({ id: input.model.primaryKey }), body: REPLACE_BODY, response: answer(input) }),
    handler: input => async (request, _reply, by) => {
      const body = request.body as { fks: Array<string | number> } | Array<string | number>
      return replace(input.ctx, input.model, input.association as CollectionAssociation, ids(request).id, Array.isArray(body) ? body : body.fks, by)
    }
  },
  {
    // Sails' development-only shortcut: replace through a GET, the ids as JSON in `?fks=`.
    action: 'replace',
    method: 'GET',
    per: 'collection',
    enabled: options => options.shortcuts,
    url: (model, association) => routePath(model, true, association, '/replace'),
    schema: input => ({ params: idParams({ id: input.model.primaryKey }), querystring: Type.Object({ fks: Type.String({ description: 'JSON array of child primary keys' }) }, { required: ['fks'] }), response: answer(input) }),
    handler: input => async (request, _reply, by) => {
      checkQueryEncoding(request.url)
      const text = (request.query as { fks: string }).fks
      let fks: unknown
      try {
        fks = JSON.parse(text)
      } catch (err) {
        throw new BP_ERR_INVALID_JSON('fks', (err as Error).message)
      }
      if (!Array.isArray(fks)) throw new BP_ERR_INVALID_ID('fks', `must be a JSON array of primary keys, got ${describe(fks)}`)
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
