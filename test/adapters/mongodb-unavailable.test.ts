import { MongoNetworkError, MongoServerError } from 'mongodb';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { isUnavailable } from '../../adapters/storage/mongodb/mongodb-errors.js';

const test = suite('MongoDB adapter: which failures are "storage unavailable"');

/** What Node's net.Socket throws when a command is written after the server closed the connection. */
const socketEnded = () => Object.assign(new Error('This socket has been ended by the other party'), { code: 'EPIPE' });

test('a socket the killed server ended (EPIPE, unwrapped by the driver) is unavailability, not a fault', () => {
  // Seen in test/scale: a request in flight when FerretDB was SIGKILLed answered 500 before this.
  assert.ok(isUnavailable(socketEnded()));
  assert.ok(isUnavailable(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })));
});

test("the driver's network errors are unavailability; a bug or a server's refusal is not", () => {
  assert.ok(isUnavailable(new MongoNetworkError('connection closed')));
  assert.not.ok(isUnavailable(new TypeError('x is not a function')));
  assert.not.ok(isUnavailable(Object.assign(new Error('no such file'), { code: 'ENOENT' })));
  assert.not.ok(isUnavailable(new MongoServerError({ message: 'bad query', code: 2 })));
});

test.run();
