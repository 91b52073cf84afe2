/**
 * Every error that fastify-blueprints throws, in one place.
 *
 * Each constructor is made with `@fastify/error`, so an instance carries a stable `code`, the HTTP
 * `statusCode` and a message built from a `%s` template. Fastify's default error handler turns
 * them into the JSON body `{ statusCode, code, error, message }`. `docs/errors.md` lists the same
 * codes; a test keeps the two in sync.
 *
 * @module
 */
import createError from '@fastify/error'

// Client errors are expected and frequent: a stack trace would cost time and say nothing.
const NO_STACK = false

/** The request names a record (parent, child or the record itself) that does not exist. 404. */
export const BP_ERR_RECORD_NOT_FOUND = createError<'BP_ERR_RECORD_NOT_FOUND', 404, [string, string]>(
  'BP_ERR_RECORD_NOT_FOUND',
  'No %s record has the primary key %s',
  404,
  undefined,
  NO_STACK
)

/** Some of the records a collection is to hold (replace's `fks`) do not exist. 404. */
export const BP_ERR_CHILDREN_NOT_FOUND = createError<'BP_ERR_CHILDREN_NOT_FOUND', 404, [string, string]>(
  'BP_ERR_CHILDREN_NOT_FOUND',
  'No %s records have the primary keys %s',
  404,
  undefined,
  NO_STACK
)

/** A one-to-many child cannot leave its parent: its foreign key does not accept null. 409. */
export const BP_ERR_LINK_REQUIRED = createError<'BP_ERR_LINK_REQUIRED', 409, [string, string, string]>(
  'BP_ERR_LINK_REQUIRED',
  'Cannot remove %s from `%s`: its `%s` cannot be null',
  409,
  undefined,
  NO_STACK
)

/**
 * A write would leave its record outside what the app's policy (`parseBlueprintOptions`) lets the
 * requester see (a create or an update whose result the policy hides). Nothing is written. 403.
 */
export const BP_ERR_OUTSIDE_POLICY = createError<'BP_ERR_OUTSIDE_POLICY', 403, [string, string]>(
  'BP_ERR_OUTSIDE_POLICY',
  'The write would leave the %s record %s outside what this request may see; nothing was written',
  403,
  undefined,
  NO_STACK
)

/** A populate request for a singular association whose value is empty. 404. */
export const BP_ERR_ASSOCIATION_EMPTY = createError<'BP_ERR_ASSOCIATION_EMPTY', 404, [string, string, string]>(
  'BP_ERR_ASSOCIATION_EMPTY',
  'The %s record %s has no `%s`',
  404,
  undefined,
  NO_STACK
)

/** A route parameter (`:id`, `:fk`) cannot be read as the primary key type. 400. */
export const BP_ERR_INVALID_ID = createError<'BP_ERR_INVALID_ID', 400, [string, string]>(
  'BP_ERR_INVALID_ID',
  'The `%s` parameter %s',
  400,
  undefined,
  NO_STACK
)

/** A query parameter that must hold JSON (`where`, `sort`) does not parse. 400. */
export const BP_ERR_INVALID_JSON = createError<'BP_ERR_INVALID_JSON', 400, [string, string]>(
  'BP_ERR_INVALID_JSON',
  'The `%s` parameter is not valid JSON: %s',
  400,
  undefined,
  NO_STACK
)

/** `where` (or a clause inside it) has the wrong shape. 400. */
export const BP_ERR_INVALID_WHERE = createError<'BP_ERR_INVALID_WHERE', 400, [string]>(
  'BP_ERR_INVALID_WHERE',
  'Invalid `where`: %s',
  400,
  undefined,
  NO_STACK
)

/** A filter, sort, select, omit or populate names something the model does not have. 400. */
export const BP_ERR_UNKNOWN_ATTRIBUTE = createError<'BP_ERR_UNKNOWN_ATTRIBUTE', 400, [string, string, string, string]>(
  'BP_ERR_UNKNOWN_ATTRIBUTE',
  'The `%s` parameter names `%s`, which is not an attribute of %s%s',
  400,
  undefined,
  NO_STACK
)

/** An attribute exists but cannot be used the way the parameter asks. 400. */
export const BP_ERR_ATTRIBUTE_NOT_ALLOWED = createError<'BP_ERR_ATTRIBUTE_NOT_ALLOWED', 400, [string, string, string]>(
  'BP_ERR_ATTRIBUTE_NOT_ALLOWED',
  'The `%s` parameter cannot use `%s`: %s',
  400,
  undefined,
  NO_STACK
)

/** A `where` modifier that does not exist. 400. */
export const BP_ERR_UNKNOWN_MODIFIER = createError<'BP_ERR_UNKNOWN_MODIFIER', 400, [string, string, string]>(
  'BP_ERR_UNKNOWN_MODIFIER',
  'Invalid `where`: `%s` is not a modifier (on `%s`)%s',
  400,
  undefined,
  NO_STACK
)

/** A long-form modifier that Sails 1.0 removed (`lessThan`, …). 400. */
export const BP_ERR_RETIRED_MODIFIER = createError<'BP_ERR_RETIRED_MODIFIER', 400, [string, string, string]>(
  'BP_ERR_RETIRED_MODIFIER',
  'Invalid `where`: the modifier `%s` (on `%s`) was removed in Sails 1.0; use `%s`',
  400,
  undefined,
  NO_STACK
)

/** A value cannot be read as the type of the attribute it is compared with. 400. */
export const BP_ERR_INVALID_VALUE = createError<'BP_ERR_INVALID_VALUE', 400, [string, string, string]>(
  'BP_ERR_INVALID_VALUE',
  'The `%s` parameter has an invalid value for `%s`: %s',
  400,
  undefined,
  NO_STACK
)

/** A parameter or body is larger than a configured limit (`limits` option). 400. */
export const BP_ERR_LIMIT_EXCEEDED = createError<'BP_ERR_LIMIT_EXCEEDED', 400, [string, string]>(
  'BP_ERR_LIMIT_EXCEEDED',
  'The `%s` parameter exceeds a limit: %s',
  400,
  undefined,
  NO_STACK
)

/** A query parameter's percent-encoding, or a JSON body's bytes, are not valid UTF-8. 400. */
export const BP_ERR_INVALID_ENCODING = createError<'BP_ERR_INVALID_ENCODING', 400, [string]>(
  'BP_ERR_INVALID_ENCODING',
  'The `%s` parameter is not valid UTF-8',
  400,
  undefined,
  NO_STACK
)

/** `limit` is not a natural number or `Infinity`. 400. */
export const BP_ERR_INVALID_LIMIT = createError<'BP_ERR_INVALID_LIMIT', 400, [string, string]>(
  'BP_ERR_INVALID_LIMIT',
  'The `%s` parameter must be a whole number from 0 up, or Infinity; got %s',
  400,
  undefined,
  NO_STACK
)

/** `limit` is above the configured `maxLimit`. 400. */
export const BP_ERR_LIMIT_TOO_LARGE = createError<'BP_ERR_LIMIT_TOO_LARGE', 400, [string, string]>(
  'BP_ERR_LIMIT_TOO_LARGE',
  'The `limit` parameter is %s, above the maximum of %s',
  400,
  undefined,
  NO_STACK
)

/** `skip` is negative or not a whole number. 400. */
export const BP_ERR_INVALID_SKIP = createError<'BP_ERR_INVALID_SKIP', 400, [string]>(
  'BP_ERR_INVALID_SKIP',
  'The `skip` parameter must be a whole number from 0 up; got %s',
  400,
  undefined,
  NO_STACK
)

/** `count` is neither `true` nor `false`. 400. */
export const BP_ERR_INVALID_COUNT = createError<'BP_ERR_INVALID_COUNT', 400, [string]>(
  'BP_ERR_INVALID_COUNT',
  'The `count` parameter must be true or false; got %s',
  400,
  undefined,
  NO_STACK
)

/**
 * `after` / `before` is not a cursor of this query: not a cursor, made by another version, for
 * another query (another `where` or `sort`), or with values the sort keys cannot hold. 400.
 */
export const BP_ERR_INVALID_CURSOR = createError<'BP_ERR_INVALID_CURSOR', 400, [string, string]>(
  'BP_ERR_INVALID_CURSOR',
  'The `%s` parameter is not a cursor of this query: %s',
  400,
  undefined,
  NO_STACK
)

/** `follow` is neither `true` nor `false`. 400. */
export const BP_ERR_INVALID_FOLLOW = createError<'BP_ERR_INVALID_FOLLOW', 400, [string]>(
  'BP_ERR_INVALID_FOLLOW',
  'The `follow` parameter must be true or false; got %s',
  400,
  undefined,
  NO_STACK
)

/** A followed find's `limit` is above what a socket may follow (`realtime.maxSubscriptions`). 400. */
export const BP_ERR_FOLLOW_LIMIT = createError<'BP_ERR_FOLLOW_LIMIT', 400, [string, string]>(
  'BP_ERR_FOLLOW_LIMIT',
  'The `limit` of a followed find must be at most %s (realtime.maxSubscriptions); got %s',
  400,
  undefined,
  NO_STACK
)

/** `sort` has the wrong shape or direction. 400. */
export const BP_ERR_INVALID_SORT = createError<'BP_ERR_INVALID_SORT', 400, [string]>(
  'BP_ERR_INVALID_SORT',
  'Invalid `sort`: %s',
  400,
  undefined,
  NO_STACK
)

/** `select` and `omit` were both given. 400. */
export const BP_ERR_SELECT_AND_OMIT = createError<'BP_ERR_SELECT_AND_OMIT', 400>(
  'BP_ERR_SELECT_AND_OMIT',
  'The `select` and `omit` parameters cannot be used together',
  400,
  undefined,
  NO_STACK
)

/** `populate` names something that is not an association, or is malformed. 400. */
export const BP_ERR_INVALID_POPULATE = createError<'BP_ERR_INVALID_POPULATE', 400, [string]>(
  'BP_ERR_INVALID_POPULATE',
  'Invalid `populate`: %s',
  400,
  undefined,
  NO_STACK
)

/** A criteria parameter was given where it has no meaning (e.g. `limit` on a singular populate). 400. */
export const BP_ERR_PARAMETER_NOT_ALLOWED = createError<'BP_ERR_PARAMETER_NOT_ALLOWED', 400, [string, string]>(
  'BP_ERR_PARAMETER_NOT_ALLOWED',
  'The `%s` parameter is not allowed here: %s',
  400,
  undefined,
  NO_STACK
)

/** create: attributes without a default are missing from the body. 400. */
export const BP_ERR_MISSING_VALUE = createError<'BP_ERR_MISSING_VALUE', 400, [string, string]>(
  'BP_ERR_MISSING_VALUE',
  'The body has no value for %s, which %s required',
  400,
  undefined,
  NO_STACK
)

/** A write would duplicate a unique value (or an existing primary key). 409. */
export const BP_ERR_UNIQUE = createError<'BP_ERR_UNIQUE', 409, [string]>(
  'BP_ERR_UNIQUE',
  '%s',
  409,
  undefined,
  NO_STACK
)

/** A write breaks a database constraint (for example destroying a record that others require). 409. */
export const BP_ERR_CONSTRAINT = createError<'BP_ERR_CONSTRAINT', 409, [string]>(
  'BP_ERR_CONSTRAINT',
  'The change breaks a database constraint: %s',
  409,
  undefined,
  NO_STACK
)

/** The database refused a value that passed the plugin's own checks (class 22 of SQLSTATE). 400. */
export const BP_ERR_VALUE_REJECTED = createError<'BP_ERR_VALUE_REJECTED', 400>(
  'BP_ERR_VALUE_REJECTED',
  'The database refused a value of the request: it does not fit its column',
  400,
  undefined,
  NO_STACK
)

/** The database cannot be reached, is starting or stopping, or dropped the connection. 503. */
export const BP_ERR_DATABASE_UNAVAILABLE = createError<'BP_ERR_DATABASE_UNAVAILABLE', 503>(
  'BP_ERR_DATABASE_UNAVAILABLE',
  'The database is unavailable; try again later',
  503,
  undefined,
  NO_STACK
)

/** Concurrent writes kept a write from completing (deadlock or serialisation failure) after retries. 503. */
export const BP_ERR_DATABASE_BUSY = createError<'BP_ERR_DATABASE_BUSY', 503>(
  'BP_ERR_DATABASE_BUSY',
  'The database is busy with concurrent writes on the same records; try again',
  503,
  undefined,
  NO_STACK
)

/** A statement ran past a time limit (`statement_timeout`, `pg`'s `query_timeout`) or was cancelled. 503. */
export const BP_ERR_DATABASE_TIMEOUT = createError<'BP_ERR_DATABASE_TIMEOUT', 503>(
  'BP_ERR_DATABASE_TIMEOUT',
  'The database did not finish the request in time; try again later',
  503,
  undefined,
  NO_STACK
)

/**
 * The database did not confirm a write's COMMIT (the connection broke, or its answer came later
 * than `pg`'s `query_timeout`): the write may have been saved. 504.
 */
export const BP_ERR_COMMIT_UNCONFIRMED = createError<'BP_ERR_COMMIT_UNCONFIRMED', 504>(
  'BP_ERR_COMMIT_UNCONFIRMED',
  'The database did not confirm the write: it may have been saved; read it back before trying again',
  504,
  undefined,
  NO_STACK
)

/** The database failed in a way the request did not cause; the server log has the details. 500. */
export const BP_ERR_DATABASE = createError<'BP_ERR_DATABASE', 500>(
  'BP_ERR_DATABASE',
  'The database failed to run the request',
  500
)

/**
 * A table or column the request needs does not exist in the database: the schema was not created
 * (or not migrated) for the app's entities. The message names the model, or the table. 500.
 */
export const BP_ERR_SCHEMA_MISSING = createError<'BP_ERR_SCHEMA_MISSING', 500, [string]>(
  'BP_ERR_SCHEMA_MISSING',
  'The database has no %s: create or migrate its schema for the entities (docs/getting-started.md#tables)',
  500
)

/** A websocket frame is not a request: not JSON, or without a valid `id`, `method` or `url`. 400. */
export const BP_ERR_INVALID_FRAME = createError<'BP_ERR_INVALID_FRAME', 400, [string]>(
  'BP_ERR_INVALID_FRAME',
  'Invalid frame: %s',
  400,
  undefined,
  NO_STACK
)

/** A web page of an origin that `realtime.onlyAllowOrigins` does not list tried to open a socket. 403. */
export const BP_ERR_ORIGIN_NOT_ALLOWED = createError<'BP_ERR_ORIGIN_NOT_ALLOWED', 403, [string]>(
  'BP_ERR_ORIGIN_NOT_ALLOWED',
  'Pages of the origin %s may not open a socket here',
  403,
  undefined,
  NO_STACK
)

/** A socket sent a request while `maxPending` of its requests were still running. 429. */
export const BP_ERR_TOO_MANY_REQUESTS = createError<'BP_ERR_TOO_MANY_REQUESTS', 429, [string]>(
  'BP_ERR_TOO_MANY_REQUESTS',
  'Too many requests in flight on this socket (at most %s); wait for answers before sending more',
  429,
  undefined,
  NO_STACK
)

/**
 * A socket request whose url and headers an HTTP request could not carry to this server: more
 * bytes than its `maxHeaderSize`, or more headers than its `maxHeadersCount`. 431, as Node
 * answers such an HTTP request.
 */
export const BP_ERR_HEADERS_TOO_LARGE = createError<'BP_ERR_HEADERS_TOO_LARGE', 431, [string]>(
  'BP_ERR_HEADERS_TOO_LARGE',
  'The request is larger than an HTTP request may be on this server: %s',
  431,
  undefined,
  NO_STACK
)

/** A long-polling request to the socket.io endpoint, which takes websocket connections only. 400. */
export const BP_ERR_WEBSOCKET_ONLY = createError<'BP_ERR_WEBSOCKET_ONLY', 400>(
  'BP_ERR_WEBSOCKET_ONLY',
  'The socket.io endpoint takes websocket connections only (long-polling is not served): connect with transports: ' +
    "['websocket'], as sails.io.js does",
  400,
  undefined,
  NO_STACK
)

/** An option needs a package that the app has not installed. Thrown at start-up. */
export const BP_ERR_MISSING_PACKAGE = createError<'BP_ERR_MISSING_PACKAGE', 500, [string, string, string]>(
  'BP_ERR_MISSING_PACKAGE',
  'fastify-blueprints: %s needs the `%s` package, which is not installed: npm install %s',
  500
)

/** App code named a model that is not exposed (`publish`, `subscribe`, `unsubscribe`). */
export const BP_ERR_UNKNOWN_MODEL = createError<'BP_ERR_UNKNOWN_MODEL', 500, [string]>(
  'BP_ERR_UNKNOWN_MODEL',
  'fastify-blueprints: no model has the identity `%s`',
  500
)

/** App code passed something that is not a socket of this plugin to `subscribe` / `unsubscribe`. */
export const BP_ERR_NOT_A_SOCKET = createError<'BP_ERR_NOT_A_SOCKET', 500>(
  'BP_ERR_NOT_A_SOCKET',
  'fastify-blueprints: not a socket; use app.blueprints.socketOf(request)',
  500
)

/** App code called a realtime method of a plugin registered with `realtime: false`. */
export const BP_ERR_REALTIME_DISABLED = createError<'BP_ERR_REALTIME_DISABLED', 500, [string]>(
  'BP_ERR_REALTIME_DISABLED',
  'fastify-blueprints: %s needs realtime, which the options turn off',
  500
)

/** The plugin was registered with invalid options. Thrown at start-up, never per request. */
export const BP_ERR_INVALID_OPTION = createError<'BP_ERR_INVALID_OPTION', 500, [string]>(
  'BP_ERR_INVALID_OPTION',
  'fastify-blueprints: invalid option: %s',
  500
)

/**
 * An entity the plugin would expose is one of a class hierarchy mapped by inheritance (single-table
 * or table-per-type), whose rows the plugin cannot tell apart yet. Thrown at start-up.
 */
export const BP_ERR_UNSUPPORTED_ENTITY = createError<'BP_ERR_UNSUPPORTED_ENTITY', 500, [string, string, string]>(
  'BP_ERR_UNSUPPORTED_ENTITY',
  'fastify-blueprints: %s is mapped by %s inheritance, whose rows the plugin cannot tell apart yet ' +
    '(every read would answer its siblings): leave its hierarchy out (%s)',
  500
)

/** The ORM runs on a database this plugin does not translate criteria for. Thrown at start-up. */
export const BP_ERR_UNSUPPORTED_DATABASE = createError<'BP_ERR_UNSUPPORTED_DATABASE', 500, [string]>(
  'BP_ERR_UNSUPPORTED_DATABASE',
  'fastify-blueprints: unsupported database platform %s (PostgreSQL and SQLite are supported)',
  500
)

/**
 * Every error constructor, keyed by its code. `docs/errors.md` documents exactly these keys.
 *
 * @example
 * ```ts
 * import { errors } from 'fastify-blueprints'
 * if (err.code === errors.BP_ERR_RECORD_NOT_FOUND.prototype.code) reply.code(404)
 * ```
 */
export const errors = {
  BP_ERR_RECORD_NOT_FOUND,
  BP_ERR_ASSOCIATION_EMPTY,
  BP_ERR_CHILDREN_NOT_FOUND,
  BP_ERR_LINK_REQUIRED,
  BP_ERR_OUTSIDE_POLICY,
  BP_ERR_INVALID_ID,
  BP_ERR_INVALID_JSON,
  BP_ERR_INVALID_WHERE,
  BP_ERR_UNKNOWN_ATTRIBUTE,
  BP_ERR_ATTRIBUTE_NOT_ALLOWED,
  BP_ERR_UNKNOWN_MODIFIER,
  BP_ERR_RETIRED_MODIFIER,
  BP_ERR_INVALID_VALUE,
  BP_ERR_INVALID_LIMIT,
  BP_ERR_LIMIT_TOO_LARGE,
  BP_ERR_LIMIT_EXCEEDED,
  BP_ERR_INVALID_ENCODING,
  BP_ERR_INVALID_SKIP,
  BP_ERR_INVALID_COUNT,
  BP_ERR_INVALID_CURSOR,
  BP_ERR_INVALID_FOLLOW,
  BP_ERR_FOLLOW_LIMIT,
  BP_ERR_INVALID_SORT,
  BP_ERR_SELECT_AND_OMIT,
  BP_ERR_INVALID_POPULATE,
  BP_ERR_PARAMETER_NOT_ALLOWED,
  BP_ERR_MISSING_VALUE,
  BP_ERR_UNIQUE,
  BP_ERR_CONSTRAINT,
  BP_ERR_VALUE_REJECTED,
  BP_ERR_DATABASE_UNAVAILABLE,
  BP_ERR_DATABASE_BUSY,
  BP_ERR_DATABASE_TIMEOUT,
  BP_ERR_COMMIT_UNCONFIRMED,
  BP_ERR_DATABASE,
  BP_ERR_SCHEMA_MISSING,
  BP_ERR_INVALID_FRAME,
  BP_ERR_ORIGIN_NOT_ALLOWED,
  BP_ERR_TOO_MANY_REQUESTS,
  BP_ERR_HEADERS_TOO_LARGE,
  BP_ERR_WEBSOCKET_ONLY,
  BP_ERR_UNKNOWN_MODEL,
  BP_ERR_NOT_A_SOCKET,
  BP_ERR_REALTIME_DISABLED,
  BP_ERR_INVALID_OPTION,
  BP_ERR_MISSING_PACKAGE,
  BP_ERR_UNSUPPORTED_DATABASE,
  BP_ERR_UNSUPPORTED_ENTITY
} as const
