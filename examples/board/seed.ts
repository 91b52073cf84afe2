// The board's seed data, with explicit ids (the database assigns its own order otherwise).
import type { MikroORM } from '@mikro-orm/core'
import { Label, Project, Task, User } from './entities.ts'

export const USERS = [
  { id: 1, name: 'Ada', email: 'ada@example.com', role: 'member' },
  { id: 2, name: 'Grace', email: 'grace@example.com', role: 'member' },
  { id: 3, name: 'Linus', email: 'linus@example.com', role: 'member' },
  { id: 4, name: 'Viv', email: 'viv@example.com', role: 'viewer' }
]

export const PROJECTS = [
  { id: 1, name: 'Website', description: 'The new public site', members: [1, 2, 4] },
  { id: 2, name: 'Mobile app', description: null, members: [2, 3] }
]

export const LABELS = [
  { id: 1, name: 'bug', color: '#d73a4a' },
  { id: 2, name: 'feature', color: '#0e8a16' },
  { id: 3, name: 'design', color: '#5319e7' },
  { id: 4, name: 'urgent', color: '#fbca04' }
]

export const TASKS = [
  { id: 1, title: 'Sketch the home page', done: true, project: 1, assignee: 2, labels: [3] },
  { id: 2, title: 'Fix the broken footer links', done: false, project: 1, assignee: 1, labels: [1, 4] },
  { id: 3, title: 'Write the about page', done: false, project: 1, assignee: null, labels: [2] },
  { id: 4, title: 'Pick a colour palette', done: true, project: 1, assignee: 2, labels: [3] },
  { id: 5, title: 'Set up continuous delivery', done: false, project: 1, assignee: 1, labels: [2] },
  { id: 6, title: 'Offline mode', done: false, project: 2, assignee: 3, labels: [2] },
  { id: 7, title: 'Crash on login with an empty password', done: false, project: 2, assignee: 2, labels: [1, 4] },
  { id: 8, title: 'Push notifications', done: false, project: 2, assignee: null, labels: [2] },
  { id: 9, title: 'Dark theme', done: false, project: 2, assignee: 3, labels: [3, 2] },
  { id: 10, title: 'App store screenshots', done: false, project: 2, assignee: null, labels: [3] },
  { id: 11, title: 'Accessibility review', done: false, project: 1, assignee: null, labels: [] },
  { id: 12, title: 'Search', done: false, project: 1, assignee: 3, labels: [2] }
]

/** Writes the seed data through MikroORM (on a forked entity manager). */
export async function seed (orm: MikroORM): Promise<void> {
  const em = orm.em.fork()
  for (const user of USERS) em.create(User, user)
  for (const label of LABELS) em.create(Label, label)
  for (const project of PROJECTS) em.create(Project, project)
  for (const task of TASKS) em.create(Task, task)
  await em.flush()
}
