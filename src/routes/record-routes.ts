/**
 * Routes of the record actions: create, update and destroy.
 *
 * @module
 */
import { Type } from 'typebox'
import { create } from '../actions/create.ts'
import { destroy } from '../actions/destroy.ts'
import { update } from '../actions/update.ts'
import { bodySchema, idParams, recordSchemaId } from '../models/schemas.ts'
import type { RouteInput, RouteSpec } from './route-spec.ts'
import { routePath } from '../models/identity.ts'

function answer (input: RouteInput): Record<string, unknown> {
  return { 200: Type.Ref(recordSchemaId(input.model.identity)), '4xx': Type.Ref('blueprints.error') }
}

const UPDATE: RouteSpec = {
  action: 'update',
  method: 'PATCH',
  per: 'model',
  body: 'read-by-action',
  url: model => routePath(model, true),
  schema: input => ({ params: idParams({ id: input.model.primaryKey }), body: bodySchema(input.model, 'update'), response: answer(input) }),
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
    handler: input => async (request, _reply, by) => create(input.ctx, input.model, request.body as Record<string, unknown>, by)
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
    handler: input => async (request, _reply, by) => destroy(input.ctx, input.model, (request.params as { id: string }).id, by)
  }
]
