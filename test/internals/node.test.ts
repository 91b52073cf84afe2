// Canary of the one private member of Node's the plugin reads (src/internals/node/upgrade-answer.ts):
// on the Node the suite runs on, a response assigned a socket is found on it. When this fails, a
// Node release moved it: upgrades answered over HTTP are no longer closed by the server
// (test/adversarial/upgrades.test.ts fails too), and the fenced module needs another way.
import t from 'tap'
import { IncomingMessage, ServerResponse } from 'node:http'
import { Socket } from 'node:net'
import { answerOf, recordsAnswers } from '../../src/internals/node/upgrade-answer.ts'

t.test('Node records the response on the socket it is assigned', async t => {
  t.equal(recordsAnswers(), true, `Node ${process.version}: the probe holds`)
  t.equal(recordsAnswers(), true, 'asked again: the same answer')
  const socket = new Socket()
  t.equal(answerOf(socket), undefined, 'a socket without an answer')
  const response = new ServerResponse(new IncomingMessage(socket))
  response.assignSocket(socket)
  t.equal(answerOf(socket), response, 'the response assigned to it')
  response.detachSocket(socket)
  socket.destroy()
})
