/**
 * The shape of a row of the route table (table.ts) and what its handlers are built from.
 *
 * @module
 */
import type { FastifyReply, FastifyRequest, FastifySchema } from 'fastify'
import type { ActionContext, Requester } from '../actions/context.ts'
import type { Association, Model } from '../models/model.ts'
import type { BlueprintAction, RouteSettings } from './route-options.ts'

/** What a handler is built from. */
export interface RouteInput {
  readonly ctx: ActionContext
  readonly options: RouteSettings
  readonly model: Model
  /** For populate: the association the route serves. */
  readonly association?: Association
  /**
   * A flat read of this route may answer the JSON text written from its rows: the app allows it
   * (`textFinds`), and no `preSerialization` hook of the plugin's options is on the route.
   */
  readonly text: boolean
}

/** One row of the table. */
export interface RouteSpec {
  readonly action: BlueprintAction
  readonly method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE'
  /** One route per model, per association (populate) or per collection (add, replace, remove). */
  readonly per: 'model' | 'association' | 'collection'
  /** A second method for an action already in the table: served, left out of the OpenAPI document. */
  readonly alias?: true
  /**
   * `'read-by-action'`: the action checks and coerces the body's values itself, with coded errors
   * that name the attribute; the route only checks that the body is a JSON object (its schema
   * still documents it). Default: the body is validated against its schema.
   */
  readonly body?: 'read-by-action'
  /** Whether the options ask for this route (default: always). */
  readonly enabled?: (options: RouteSettings) => boolean
  url(model: Model, association?: Association): string
  schema(input: RouteInput): FastifySchema
  /**
   * The request's handler. `by` is who the request acts for: the policy the app's
   * `parseBlueprintOptions` gives it (`undefined` without a hook) and its origin, resolved for every
   * route of the table by the registration (register.ts) before the handler runs: the handler hands
   * it to its action, which requires it.
   */
  handler(input: RouteInput): RouteHandler
}

/** A route's handler: see {@link RouteSpec.handler}. */
export type RouteHandler = (request: FastifyRequest, reply: FastifyReply, by: Requester) => Promise<unknown>
