// The demo's models, a team board, with every kind of association:
//
//   User    m:n Project  (project.members, owning side; user.projects is the inverse side)
//   Project 1:m Task     (project.tasks, mapped by task.project)
//   User    1:m Task     (user.tasks, mapped by task.assignee, which may be null)
//   Task    m:n Label    (task.labels, via-less: labels do not list their tasks)
import { defineEntity, p, type InferEntity } from '@mikro-orm/core'

export const User = defineEntity({
  name: 'User',
  properties: {
    id: p.integer().primary(),
    name: p.string(),
    email: p.string().unique(),
    // 'member' may write, 'viewer' may only read (see the policy in app.ts).
    role: p.string().default('member'),
    projects: () => p.manyToMany(Project).mappedBy('members'),
    tasks: () => p.oneToMany(Task).mappedBy('assignee')
  }
})
export type IUser = InferEntity<typeof User>

export const Project = defineEntity({
  name: 'Project',
  properties: {
    id: p.integer().primary(),
    name: p.string(),
    description: p.string().nullable(),
    members: () => p.manyToMany(User).owner().inversedBy('projects'),
    tasks: () => p.oneToMany(Task).mappedBy('project')
  }
})
export type IProject = InferEntity<typeof Project>

export const Task = defineEntity({
  name: 'Task',
  properties: {
    id: p.integer().primary(),
    title: p.string(),
    done: p.boolean().default(false),
    project: () => p.manyToOne(Project),
    assignee: () => p.manyToOne(User).nullable(),
    labels: () => p.manyToMany(Label)
  }
})
export type ITask = InferEntity<typeof Task>

export const Label = defineEntity({
  name: 'Label',
  properties: {
    id: p.integer().primary(),
    name: p.string().unique(),
    color: p.string()
  }
})
export type ILabel = InferEntity<typeof Label>

export const entities = [User, Project, Task, Label]
