// The board's page: the package's browser client (served from its sources by app.ts, no build
// step) runs every request over one websocket; what it reads subscribes it, and what other tabs
// change arrives as notifications, upon which the page reads again. The project's open and done
// tasks are two followed queries (client.live): the server says which tasks enter and leave each
// list, and the lists are kept from that alone.
import { connect } from '/lib/client/index.ts'

const PAGE_SIZE = 5
const $ = id => document.getElementById(id)
const state = { page: 0, total: 0, selected: undefined, labels: [] }

// The user is a cookie, read by the server's write policy on every request (HTTP or socket: the
// socket's requests carry the cookies of its upgrade, so the socket is opened again on a change).
const userOf = () => /(?:^|;\s*)board_user=([1-9]\d*)(?:;|$)/.exec(document.cookie)?.[1]
// A label's colour goes into a style only when it is a plain colour: the server refuses others, but
// a page does not trust what it is sent (an older row, another writer): `url(//…)` in a style would
// have every reader's browser fetch that address.
const COLOR = /^#[0-9a-f]{6}$/i
let client = open()

function open () {
  const socket = connect(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/api/socket`)
  socket.onStatus(status => { $('status').textContent = `socket ${status}` })
  socket.on('task', () => { void refresh() })
  socket.on('label', () => { void refresh() })
  socket.onResync(() => { void refresh() })
  return socket
}

/** Sends a write; shows its error, if any. */
async function write (method, url, body) {
  const { statusCode, body: answer } = await client.request(method, url, body)
  $('error').textContent = statusCode === 200 ? '' : `${statusCode}: ${answer.message}`
  await refresh()
}

async function refresh () {
  const { body: tasks, headers } = await client.get('/api/task', { sort: 'id ASC', limit: PAGE_SIZE, skip: state.page * PAGE_SIZE, count: true })
  state.total = Number(headers['x-total-count'])
  const pages = Math.max(1, Math.ceil(state.total / PAGE_SIZE))
  $('page').textContent = `page ${state.page + 1} of ${pages} — ${state.total} tasks`
  $('prev').disabled = state.page === 0
  $('next').disabled = state.page + 1 >= pages
  $('tasks').replaceChildren(...tasks.map(row))
  if (state.selected !== undefined) await showDetail(state.selected)
}

function row (task) {
  const tr = document.createElement('tr')
  tr.className = `task${task.done ? ' done' : ''}${task.id === state.selected ? ' selected' : ''}`
  tr.dataset.id = task.id
  const done = document.createElement('input')
  done.type = 'checkbox'
  done.checked = task.done
  done.setAttribute('aria-label', `done: ${task.title}`)
  done.addEventListener('click', event => { event.stopPropagation(); void write('PATCH', `/api/task/${task.id}`, { done: done.checked }) })
  const cells = [done, text(task.title, 'title'), text(task.project?.name ?? ''), text(task.assignee?.name ?? '—'), labels(task.labels)]
  for (const content of cells) tr.appendChild(document.createElement('td')).appendChild(content)
  tr.addEventListener('click', () => { state.selected = task.id; void refresh() })
  return tr
}

function text (value, className) {
  const span = document.createElement('span')
  span.textContent = value
  if (className !== undefined) span.className = className
  return span
}

function labels (list) {
  const span = document.createElement('span')
  for (const label of list) {
    const tag = span.appendChild(text(label.name, 'label'))
    tag.style.background = typeof label.color === 'string' && COLOR.test(label.color) ? label.color : 'gray'
  }
  return span
}

async function showDetail (id) {
  const { statusCode, body: task } = await client.get(`/api/task/${id}`)
  if (statusCode !== 200) {
    state.selected = undefined
    $('detail').hidden = true
    return
  }
  $('detail').hidden = false
  $('detail-id').textContent = `#${task.id}`
  if (document.activeElement !== $('title')) $('title').value = task.title
  const member = new Set(task.labels.map(label => label.id))
  $('labels').replaceChildren(...state.labels.map(label => {
    const box = document.createElement('label')
    const input = box.appendChild(document.createElement('input'))
    input.type = 'checkbox'
    input.checked = member.has(label.id)
    input.addEventListener('change', () => { void write(input.checked ? 'PUT' : 'DELETE', `/api/task/${id}/labels/${label.id}`) })
    box.append(` ${label.name} `)
    return box
  }))
}

$('prev').addEventListener('click', () => { state.page--; void refresh() })
$('next').addEventListener('click', () => { state.page++; void refresh() })
$('save').addEventListener('click', () => { void write('PATCH', `/api/task/${state.selected}`, { title: $('title').value }) })
$('clear').addEventListener('click', () => { void write('PUT', `/api/task/${state.selected}/labels`, { fks: [] }) })
$('user').addEventListener('change', () => {
  document.cookie = `board_user=${$('user').value}; path=/; SameSite=Lax`
  void client.close()
  client = open()
  void refresh()
  void follow()
})

// The followed lists of the chosen project: one live result per list.
let lists = []
async function follow () {
  for (const list of lists) list.close()
  const project = Number($('project').value)
  lists = await Promise.all([false, true].map(async done => {
    const live = await client.live('/api/task', { where: { project, done }, sort: 'id ASC', populate: false, limit: 100 })
    const render = records => { $(done ? 'done' : 'open').replaceChildren(...records.map(item)) }
    render(live.records)
    live.onChange(render)
    return live
  }))
}

function item (task) {
  const li = document.createElement('li')
  li.dataset.id = task.id
  const box = li.appendChild(document.createElement('input'))
  box.type = 'checkbox'
  box.checked = task.done
  box.setAttribute('aria-label', `${task.done ? 'reopen' : 'close'}: ${task.title}`)
  box.addEventListener('change', () => { void write('PATCH', `/api/task/${task.id}`, { done: box.checked }) })
  li.append(` ${task.title}`)
  return li
}
$('project').addEventListener('change', () => { void follow() })

// Each user with what they may change: the tasks of their projects (a viewer nothing).
const { body: users } = await client.get('/api/user', { select: 'name,role', populate: 'projects' })
$('user').replaceChildren(...[{ id: '', name: 'nobody (read only)' }, ...users].map(user => {
  const option = document.createElement('option')
  option.value = user.id
  const projects = user.projects?.map(project => project.name).join(', ') || 'no project'
  option.textContent = user.role === undefined ? user.name : `${user.name} (${user.role === 'member' ? `member of ${projects}` : `${user.role}, read only`})`
  option.selected = String(user.id) === (userOf() ?? '')
  return option
}))
state.labels = (await client.get('/api/label', { sort: 'name ASC' })).body
const { body: projects } = await client.get('/api/project', { select: 'name', populate: false })
$('project').replaceChildren(...projects.map(project => {
  const option = document.createElement('option')
  option.value = project.id
  option.textContent = project.name
  return option
}))
await Promise.all([refresh(), follow()])
