/**
 * The model registry: every exposed model by identity, built once when the plugin starts, with
 * its associations resolved to their target models.
 *
 * @module
 */
import type { EntityMetadata, MikroORM } from '@mikro-orm/core'
import { BP_ERR_INVALID_OPTION, BP_ERR_UNKNOWN_MODEL, BP_ERR_UNSUPPORTED_ENTITY } from '../errors.ts'
import { didYouMean } from '../did-you-mean.ts'
import { modelInfo, type BlueprintModels } from './info.ts'
import { readModels, type ModelDraft, type Skipped } from './metadata.ts'
import type { CollectionAssociation, Model, SingularAssociation } from './model.ts'
import { defaultIdentity, isIdentity } from './identity.ts'

/**
 * The exposed models, inside the plugin (the app sees {@link BlueprintModels}).
 *
 * @example
 * ```ts
 * const user = registry.get('user')
 * console.log(user?.primaryKey.column, [...user!.collections.values()].map(c => c.target.table))
 * ```
 */
export interface ModelRegistry {
  /** The model with this identity, if it is exposed. */
  get(identity: string): Model | undefined
  /** Every exposed model, in the order MikroORM discovered the entities. */
  all(): readonly Model[]
  /**
   * The model of an identity that the plugin itself wrote (a change, a notification): one this
   * registry holds, unless a broker carries the notifications of an app with other models.
   *
   * @throws BP_ERR_UNKNOWN_MODEL when no model has it.
   */
  model(identity: string): Model
  /** Entities and properties that were left out, and why. */
  readonly skipped: readonly Skipped[]
  /** What the app is shown of the same models: `app.blueprints.models`. */
  readonly public: BlueprintModels
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
 * @throws BP_ERR_UNSUPPORTED_ENTITY for an entity mapped by inheritance that is not excluded.
 */
export function buildRegistry (orm: MikroORM, options: RegistryOptions): ModelRegistry {
  const storage = orm.getMetadata()
  const known = new Set<string>()
  for (const meta of storage) known.add(meta.className)
  for (const name of options.mentioned) {
    if (!known.has(name)) {
      throw new BP_ERR_INVALID_OPTION(
        `there is no entity named ${name} (\`models.${name}\`)${didYouMean(name, [...known])}`
      )
    }
  }
  const excluded = new Set(options.exclude)
  refuseInheritance([...storage], excluded)
  const { models, skipped } = readModels(storage, name => options.identities[name] ?? defaultIdentity(name))
  const drafts = new Map<string, ModelDraft>()
  for (const draft of models) {
    if (excluded.has(draft.entityName)) continue
    if (!isIdentity(draft.identity)) {
      throw new BP_ERR_INVALID_OPTION(
        `identity "${draft.identity}" of ${draft.entityName} may only hold letters, digits, _ ` +
          `and -`
      )
    }
    const other = drafts.get(draft.identity)
    if (other !== undefined) {
      throw new BP_ERR_INVALID_OPTION(
        `${other.entityName} and ${draft.entityName} would both have the identity "${draft.identity}"`
      )
    }
    drafts.set(draft.identity, draft)
  }
  const byIdentity = resolve(drafts)
  const list = [...byIdentity.values()]
  const infos = new Map(list.map(model => [model.identity, model.info]))
  const infoList = list.map(model => model.info)
  return {
    get: identity => byIdentity.get(identity),
    model: identity => {
      const model = byIdentity.get(identity)
      if (model === undefined) throw new BP_ERR_UNKNOWN_MODEL(identity)
      return model
    },
    all: () => list,
    skipped,
    public: Object.freeze({ get: (identity: string) => infos.get(identity), all: () => infoList, skipped })
  }
}

/**
 * Refuses an entity mapped by inheritance (MikroORM's single-table or table-per-type) that is not
 * excluded: its rows share a table (or span two) with its hierarchy's, which the plugin's reads do
 * not tell apart — `GET /cat` would list dogs (docs/getting-started.md#inheritance).
 *
 * @throws BP_ERR_UNSUPPORTED_ENTITY naming the entity and every entity of its hierarchy.
 */
function refuseInheritance (metas: readonly EntityMetadata[], excluded: ReadonlySet<string>): void {
  // (Every entity's `root` is the root of its hierarchy, itself outside one.)
  for (const meta of metas) {
    const kind = meta.root.inheritanceType
    if (kind === undefined || excluded.has(meta.className)) continue
    const family = metas.filter(other => other.root.className === meta.root.className).map(other => other.className)
    const option = `\`models: { ${family.map(name => `${name}: { expose: false }`).join(', ')} }\``
    throw new BP_ERR_UNSUPPORTED_ENTITY(meta.className, kind === 'sti' ? 'single-table' : 'table-per-type', option)
  }
}

/**
 * The models of `drafts`, their associations pointing at the models themselves. An association to
 * a model that is not exposed (excluded by the options) is left out: it has no routes to point at.
 * The models are made first with empty association maps, then the maps are filled, so that
 * associations may form cycles (a model pointing at itself, two models at each other).
 */
function resolve (drafts: ReadonlyMap<string, ModelDraft>): Map<string, Model> {
  const byIdentity = new Map<string, Model>()
  const shown = <A extends { readonly target: string }>(associations: ReadonlyMap<string, A>): A[] =>
    [...associations.values()].filter(a => drafts.has(a.target))
  const models = [...drafts.values()].map(draft => {
    const model = {
      ...draft,
      singulars: new Map<string, SingularAssociation>(),
      collections: new Map<string, CollectionAssociation>(),
      info: modelInfo({ ...draft, singulars: shown(draft.singulars), collections: shown(draft.collections) })
    }
    byIdentity.set(draft.identity, model)
    return { draft, model }
  })
  for (const { draft, model } of models) {
    for (const association of draft.singulars.values()) {
      const target = byIdentity.get(association.target)
      if (target !== undefined) model.singulars.set(association.name, { ...association, target })
    }
    for (const association of draft.collections.values()) {
      const target = byIdentity.get(association.target)
      if (target !== undefined) model.collections.set(association.name, { ...association, target })
    }
  }
  return byIdentity
}
