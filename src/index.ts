/**
 * fastify-blueprints: Sails.js v1 blueprint routes for MikroORM 7 entities on Fastify 5.
 *
 * @packageDocumentation
 */
import { blueprints } from './plugin.ts'

export default blueprints
export { blueprints }
export type { Blueprints } from './plugin.ts'
export type {
  ActionOptions,
  BlueprintAction,
  BlueprintsOptions,
  ModelOptions,
  ParseBlueprintOptions,
  QueryContext,
  RouteHooks
} from './options.ts'
export { DEFAULTS } from './options.ts'
export { openapiRefResolver } from './openapi.ts'
export type { OpenApiOptions } from './openapi.ts'
export { LIMIT_DEFAULTS } from './limits.ts'
export type { Limits } from './limits.ts'
export { REALTIME_DEFAULTS } from './realtime/options.ts'
export type { RealtimeOptions } from './realtime/options.ts'
export { MemoryBroker } from './realtime/brokers/memory.ts'
export type { Broker, BrokerLog, Envelope, EnvelopeHandler, EnvelopeItem } from './realtime/brokers/broker.ts'
export type { BlueprintSocket } from './realtime/socket.ts'
export type { Authorize, Notification } from './realtime/hub/hub.ts'
export type { Audience } from './realtime/options.ts'
export type { RealtimeStats } from './realtime/subscriptions.ts'
export type { FollowStats } from './realtime/live/live-queries.ts'
export type { LogReadiness, Readiness, ReadinessCheck, ReadinessOptions } from './readiness.ts'
export type { InstrumentOptions, MeterLike, MetricsOptions, ObservableLike, ObservationLike } from './metrics.ts'
export type { BlueprintQuery, SortDirection } from './criteria/types.ts'
export type {
  AssociationInfo,
  AttributeInfo,
  AttributeType,
  BlueprintModels,
  CollectionInfo,
  ModelInfo,
  SingularInfo,
  Skipped
} from './models/info.ts'
export type { BlueprintRouteConfig } from './routes/register.ts'
export { errors } from './errors.ts'
export { createdAt, createdAtIso, updatedAt, updatedAtIso } from './timestamps.ts'
export type {
  Change,
  ChangeContext,
  ChangeListener,
  ChangeMessage,
  AddedTo,
  RemovedFrom,
  Updated,
  Created,
  Destroyed,
  Id
} from './actions/changes.ts'
export type { Changed, Ended, Entered, Left, LiveMessage } from './messages.ts'
