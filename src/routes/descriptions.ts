/**
 * What the OpenAPI document says of each blueprint route: a summary and a description per action.
 *
 * @module
 */
import type { BlueprintAction } from './route-options.ts'

type Describe = (model: string, association: string) => readonly [summary: string, description: string]

const DESCRIPTIONS: Readonly<Record<BlueprintAction | 'replaceShortcut', Describe>> = {
  find: model => [
    `Find ${model} records`,
    'The records that match the Waterline criteria (`where`, or one equality filter per attribute), sorted and ' +
    'paged, associations populated by default (collections up to 30 children). Over a socket, subscribes it to them and to new records of the model.'
  ],
  findOne: model => [
    `Find one ${model} record`,
    'The record with this primary key, associations populated by default. 404 when there is none.'
  ],
  populate: (
    model,
    association
  ) => [
    `The ${association} of a ${model} record`,
    'A collection: its children, with criteria. A singular association: its ' +
    'record (404 when empty).'
  ],
  create: model => [
    `Create a ${model} record`,
    'Attributes and singular associations by key; collections as arrays of keys of existing children, linked ' +
    'in the same transaction. Answers the new record, populated.'
  ],
  update: model => [
    `Update a ${model} record`,
    'Changes the attributes and singular associations given (not collections: replace them). Answers the ' +
    'record, populated.'
  ],
  destroy: model => [`Destroy a ${model} record`, 'Deletes the record and answers it as it was.'],
  add: (
    model,
    association
  ) => [
    `Add to the ${association} of a ${model} record`,
    'Links the child; answers the parent with the collection complete. ' +
    'Adding a member again changes nothing.'
  ],
  replace: (
    model,
    association
  ) => [
    `Replace the ${association} of a ${model} record`,
    'Makes `fks` the exact members of the collection (`[]` empties it); ' +
    'answers the parent with the collection complete.'
  ],
  replaceShortcut: (
    model,
    association
  ) => [
    `Replace the ${association} of a ${model} record (development shortcut)`,
    'replace through a GET, the keys as ' +
    'JSON in `fks`: for development only (`shortcuts: true`).'
  ],
  remove: (
    model,
    association
  ) => [
    `Remove from the ${association} of a ${model} record`,
    'Unlinks the child (it is not destroyed); answers the parent ' +
    'with the collection complete.'
  ]
}

/** The summary and description of a route of `action` on `model` (and `association`). */
export function describeRoute (
  action: BlueprintAction | 'replaceShortcut',
  model: string,
  association = ''
): { summary: string, description: string } {
  const [summary, description] = DESCRIPTIONS[action](model, association)
  return { summary, description }
}
