/**
 * The model registry: every exposed model by identity, built once when the plugin starts.
 *
 * @module
 */
import type { MikroORM } from '@mikro-orm/core'
import { BP_ERR_INVALID_OPTION } from '../errors.ts'
import { didYouMean } from '../did-you-mean.ts'
import { readModels, type Skipped } from './metadata.ts'
import type { Model } from './model.ts'
import { defaultIdentity, isIdentity } from './identity.ts'

/**
 * Read-only view of the exposed models, available as `app.blueprints.models`.
 *
 * @example
 * ```ts
 * const user = app.blueprints.models.get('user')
 * console.log(user?.primaryKey.name, [...user!.collections.keys()])
 * ```
 */
export interface ModelRegistry {
  /** The model with this identity, if it is exposed. */
  get (identity: string): Model | undefined
  /** Every exposed model, in the order MikroORM discovered the entities. */
  all (): readonly Model[]
  /** Entities and properties that were left out, and why. */
  readonly skipped: readonly Skipped[]
}

/** Options that shape the registry. */
export interface RegistryOptions {
  /** Entity name → identity override. */
  readonly identities: Readonly<Record<string, string>>
  /** Entity names not to expose. */
  readonly exclude: readonly string[]
  /** Every entity name the options mention (each must exist). */
  readonly mentioned: readonly string[]
}

/**
 * Builds the registry from an initialised MikroORM instance.
 *
 * @throws BP_ERR_INVALID_OPTION when two models would share an identity, or an identity or an
 * excluded entity name is invalid.
 */
export function buildRegistry (orm: MikroORM, options: RegistryOptions): ModelRegistry {
  const storage = orm.getMetadata()
  const known = new Set<string>()
  for (const meta of storage) known.add(meta.className)
  for (const name of options.mentioned) {
    if (!known.has(name)) throw new BP_ERR_INVALID_OPTION(`there is no entity named ${name} (\`models.${name}\`)${didYouMean(name, [...known])}`)
  }
  const excluded = new Set(options.exclude)
  const { models, skipped } = readModels(storage, name => options.identities[name] ?? defaultIdentity(name))
  const byIdentity = new Map<string, Model>()
  const list: Model[] = []
  for (const model of models) {
    if (excluded.has(model.entityName)) continue
    if (!isIdentity(model.identity)) throw new BP_ERR_INVALID_OPTION(`identity "${model.identity}" of ${model.entityName} may only hold letters, digits, _ ` +
      `and -`)
    const other = byIdentity.get(model.identity)
    if (other !== undefined) throw new BP_ERR_INVALID_OPTION(`${other.entityName} and ${model.entityName} would both have the identity "${model.identity}"`)
    byIdentity.set(model.identity, model)
    list.push(model)
  }
  // Associations to an excluded model are not exposed either.
  const visible = list.map(model => withoutHidden(model, byIdentity))
  byIdentity.clear()
  for (const model of visible) byIdentity.set(model.identity, model)
  return {
    get: identity => byIdentity.get(identity),
    all: () => visible,
    skipped
  }
}

function withoutHidden (model: Model, byIdentity: Map<string, Model>): Model {
  const singulars = new Map([...model.singulars].filter(([, a]) => byIdentity.has(a.target)))
  const collections = new Map([...model.collections].filter(([, a]) => byIdentity.has(a.target)))
  if (singulars.size === model.singulars.size && collections.size === model.collections.size) return model
  return { ...model, singulars, collections }
}
