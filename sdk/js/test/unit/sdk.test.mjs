// Unit tests of the SDK's modules (WebSocket, gRPC, declared options, groups, checks) on Node.js, with the host's imports faked
// (fakes.mjs); the component path is proved by building and running plugins (test.sh).
//
//   node --import ./register.mjs sdk.test.mjs

import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { runInNewContext } from 'node:vm';

import { fake } from './fakes.mjs';
import * as grpc from '../../lib/grpc.js';
import * as loadhost from '../../lib/loadhost.js';
import * as ws from '../../lib/ws.js';

const text = (bytes) => new TextDecoder().decode(bytes);

beforeEach(() => {
  fake.connections.length = 0;
  fake.calls.length = 0;
  fake.streams.length = 0;
  fake.metrics.length = 0;
  fake.sent.length = 0;
  fake.workerExpected.length = 0;
});

describe('groups', () => {
  test('groups nest, time themselves and tag the checks inside', () => {
    assert.equal(loadhost.currentGroup(), undefined);
    const value = loadhost.group('checkout', () => {
      loadhost.check('cart ok', true, { tier: 'gold' });
      return loadhost.group('pay', () => {
        assert.equal(loadhost.currentGroup(), '::checkout::pay');
        loadhost.check('paid', false);
        loadhost.check('mine', true, { group: 'own' });
        return 7;
      });
    });
    assert.equal(value, 7);
    assert.equal(loadhost.currentGroup(), undefined);
    const checks = fake.metrics.filter(([kind]) => kind === 'check').map(([, name, ok, tags]) => [name, ok, tags]);
    assert.deepEqual(checks, [
      ['cart ok', true, [['tier', 'gold'], ['group', '::checkout']]],
      ['paid', false, [['group', '::checkout::pay']]],
      ['mine', true, [['group', 'own']]],
    ]);
    const trends = fake.metrics.filter(([kind]) => kind === 'trend');
    assert.deepEqual(trends.map(([, name, , tags]) => [name, tags]), [
      ['group_duration', [['group', '::checkout::pay']]],
      ['group_duration', [['group', '::checkout']]],
    ]);
    assert.ok(trends.every(([, , ms]) => ms >= 0));
  });

  test('a group ends when its body throws or its promise settles', async () => {
    assert.throws(() => loadhost.group('login', () => { throw new Error('refused'); }), /refused/);
    assert.equal(loadhost.currentGroup(), undefined);
    const pending = loadhost.group('async', async () => {
      assert.equal(loadhost.currentGroup(), '::async');
      return 'done';
    });
    assert.equal(await pending, 'done');
    assert.equal(loadhost.currentGroup(), undefined);
    assert.deepEqual(fake.metrics.map(([, , , tags]) => tags), [[['group', '::login']], [['group', '::async']]]);
  });

  test('a bad name is refused naming the call', () => {
    assert.throws(() => loadhost.group('', () => 1), /group\(''\): a group's name must be non-empty and must not contain '::'/);
    assert.throws(() => loadhost.group('a::b', () => 1), RangeError);
    assert.throws(() => loadhost.group(7, () => 1), /group\(7\): a group's name must be a string, got number 7/);
    assert.throws(() => loadhost.group('x', 'not a function'), TypeError);
    assert.throws(() => loadhost.group('x'.repeat(300), () => 1), /longer than 256 bytes/);
    assert.deepEqual(fake.metrics, []);
  });
});

describe('sleep', () => {
  test('seconds become whole milliseconds on the host timer; a bad argument names the call', () => {
    fake.slept.length = 0;
    loadhost.sleep(0.25);
    loadhost.sleep(0.0001);
    loadhost.sleep(0);
    assert.deepEqual(fake.slept, [250, 1, 0]);
    for (const bad of ['1s', -1, Number.NaN, Infinity, undefined]) {
      assert.throws(() => loadhost.sleep(bad), /^TypeError: sleep\(seconds\): expected a finite number of seconds/);
    }
    assert.deepEqual(fake.slept, [250, 1, 0], 'nothing slept for a bad argument');
  });
});

describe('expected statuses', () => {
  test('a request that expects statuses sends them as inclusive ranges', () => {
    loadhost.get('http://h/gone', { expectedStatuses: [{ min: 200, max: 299 }, 404] }).send();
    loadhost.get('http://h/').send();
    loadhost.get('http://h/').expectedStatuses(404).send();
    assert.deepEqual(fake.sent.map((s) => s.statuses), [[[200, 299], [404, 404]], undefined, [[404, 404]]]);
    loadhost.setExpectedStatuses({ min: 200, max: 399 }, 404);
    loadhost.setExpectedStatuses();
    assert.deepEqual(fake.workerExpected, [[[200, 399], [404, 404]], []]);
    for (const bad of [{ min: 300, max: 200 }, '404', -1, 1.5, 70000]) {
      assert.throws(() => loadhost.get('http://h/').expectedStatuses(bad), RangeError);
    }
    assert.throws(() => loadhost.get('http://h/', { expectedStatuses: 404 }), TypeError);
    assert.equal(fake.sent.length, 3);
  });
});

describe('last timings', () => {
  test("the host's phases of the last response come back as given", () => {
    assert.deepEqual(loadhost.lastTimings(), {
      blocked: 0.1, connecting: 0, tlsHandshaking: 0, sending: 0.02, waiting: 1.5, receiving: 0.03, duration: 1.55,
    });
  });
});

describe('ws', () => {
  test('connect sends the headers as bytes and the timeout', () => {
    const conn = ws.connect('ws://h/echo', { headers: { 'x-k': 'v' }, timeout: 2500.4 });
    const host = fake.connections[0];
    assert.equal(host.url, 'ws://h/echo');
    assert.deepEqual(host.headers.map(([n, v]) => [n, text(v)]), [['x-k', 'v']]);
    assert.equal(host.timeoutMs, 2500);
    assert.equal(conn.url, 'ws://h/echo');
    ws.connect('ws://h/', { headers: [['a', new Uint8Array([0])]] });
    assert.equal(fake.connections[1].timeoutMs, undefined);
    assert.throws(() => ws.connect('ws://h/', { timeuot: 1 }), /unknown connect option 'timeuot'/);
  });

  test('messages come back as a string, a Uint8Array or a Close', () => {
    const conn = ws.connect('ws://h/');
    conn.sendText('hello');
    conn.sendBinary(new Uint8Array([1, 2]));
    conn.send('again');
    conn.send(new Uint8Array([3]).buffer);
    assert.equal(conn.receive(1000), 'hello');
    assert.equal(fake.connections[0].receiveTimeoutMs, 1000);
    assert.deepEqual(conn.receive(), new Uint8Array([1, 2]));
    assert.equal(fake.connections[0].receiveTimeoutMs, undefined);
    assert.equal(conn.receive(), 'again');
    assert.deepEqual(conn.receive(), new Uint8Array([3]));
    fake.connections[0].inbox.push({ tag: 'close', val: { code: 1001, reason: 'going away' } });
    const closed = conn.receive();
    assert.ok(closed instanceof ws.Close);
    assert.deepEqual([closed.code, closed.reason], [1001, 'going away']);
  });

  test("the bindings' byte lists come back as the plugin's own Uint8Array", () => {
    const conn = ws.connect('ws://h/');
    // The bindings' typed arrays are of another realm: instanceof fails on them as they are.
    fake.connections[0].inbox.push({ tag: 'binary', val: runInNewContext('new Uint8Array([7, 8, 9]).subarray(1)') });
    const received = conn.receive();
    assert.ok(received instanceof Uint8Array);
    assert.deepEqual([...received], [8, 9]);
  });

  test('wrong argument types are refused before the host sees them', () => {
    const conn = ws.connect('ws://h/');
    assert.throws(() => conn.sendText(new Uint8Array(1)), TypeError);
    assert.throws(() => conn.sendBinary('x'), /sendBinary takes bytes/);
    assert.throws(() => conn.close(70000), RangeError);
    assert.throws(() => conn.receive('soon'), /timeout must be a number/);
    assert.deepEqual(fake.connections[0].sent, []);
  });

  test('host errors become WebSocketErrors with their kind', () => {
    assert.throws(() => ws.connect('ws://denied/'), (e) => e instanceof ws.WebSocketError && e.kind === 'denied'
      && /denied: the host is not allowed \(loadhost run --allow-host\)/.test(e.message));
    assert.throws(() => ws.connect('ws://many/'), (e) => e.kind === 'too-many-connections' && e.limit === 8);
    const conn = ws.connect('ws://h/');
    assert.throws(() => conn.receive(10), (e) => e.kind === 'timeout' && e.url === 'ws://h/');
    assert.throws(() => conn.sendText('break'), (e) => e.kind === 'network' && e.message === 'connection reset');
  });

  test('ping gives the round trip in milliseconds', () => {
    const conn = ws.connect('ws://h/');
    assert.equal(conn.ping(500), 2.5);
    assert.equal(fake.connections[0].pingTimeoutMs, 500);
  });

  test('close and drop release the connection once', () => {
    const conn = ws.connect('ws://h/');
    const host = fake.connections[0];
    conn.close(4000, 'done');
    assert.deepEqual([host.closedWith, host.disposed, conn.closed], [[4000, 'done'], true, true]);
    conn.close();
    assert.throws(() => conn.sendText('x'), (e) => e.kind === 'closed');
    const other = ws.connect('ws://h/');
    other.drop();
    other.drop();
    assert.deepEqual([fake.connections[1].closedWith, fake.connections[1].disposed], [undefined, true]);
    ws.connect('ws://h/').close();
    assert.deepEqual(fake.connections[2].closedWith, [1000, '']);
  });
});

describe('grpc', () => {
  test('a call sends bytes, lower-case metadata and the deadline', () => {
    const response = grpc.call('http://h:1', '/p.S/M', new Uint8Array([10, 1, 120]), {
      metadata: { 'X-Key': 'v', 'k-bin': new Uint8Array([0]) },
      timeout: 1500,
    });
    const sent = fake.calls[0];
    assert.deepEqual([sent.target, sent.method, sent.timeoutMs], ['http://h:1', '/p.S/M', 1500]);
    assert.deepEqual(sent.metadata.map(([n, v]) => [n, [...v]]), [['x-key', [118]], ['k-bin', [0]]]);
    assert.deepEqual(response.message, new Uint8Array([10, 1, 120]));
    assert.equal(response.header('Content-Type'), 'application/grpc');
    assert.equal(response.trailer('grpc-status'), undefined);
    assert.ok(response.elapsedMs >= 0);
    grpc.call('http://h:1', '/p.S/M', new Uint8Array(0));
    assert.deepEqual([fake.calls[1].metadata, fake.calls[1].timeoutMs], [[], undefined]);
  });

  test('a status other than OK throws a GrpcError with code, details and trailers', () => {
    assert.throws(() => grpc.call('http://h', '/p.S/M', new Uint8Array(0), { metadata: [['x-loadhost-status', '14']] }),
      (e) => e instanceof grpc.GrpcError && e.kind === 'status' && e.code === grpc.UNAVAILABLE && e.details === 'injected'
        && e.message === 'gRPC status 14: injected' && e.trailer('X-Why') === 'test');
  });

  test("the host's own reasons carry the code a gRPC client reports", () => {
    assert.throws(() => grpc.call('http://denied', '/p.S/M', new Uint8Array(0)),
      (e) => e.kind === 'denied' && e.code === grpc.PERMISSION_DENIED && /denied/.test(e.message));
    assert.throws(() => grpc.call('http://down', '/p.S/M', new Uint8Array(0)),
      (e) => e.kind === 'network' && e.code === grpc.UNAVAILABLE && e.details === 'connection refused');
  });

  test('a string is not a message, and options are checked', () => {
    assert.throws(() => grpc.call('http://h', '/p.S/M', 'hello'), /protobuf bytes/);
    assert.throws(() => grpc.call('http://h', '/p.S/M', new Uint8Array(0), { deadline: 5 }), /unknown call option 'deadline'/);
    assert.equal(fake.calls.length, 0);
  });

  test("messages come back as the plugin's own Uint8Array", () => {
    const call = grpc.stream('http://h', '/p.S/Bidi');
    fake.streams[0].queue.push(runInNewContext('new Uint8Array([5, 6])'));
    const received = call.receive();
    assert.ok(received instanceof Uint8Array);
    assert.deepEqual([...received], [5, 6]);
  });

  test('a stream sends, receives, half-closes and ends', () => {
    const call = grpc.stream('http://h', '/p.S/Bidi', { metadata: { a: 'b' }, timeout: 3000 });
    call.send(new Uint8Array([1]));
    assert.deepEqual(call.receive(1000), new Uint8Array([1]));
    assert.throws(() => call.receive(10), (e) => e.kind === 'timeout' && e.code === grpc.DEADLINE_EXCEEDED);
    call.closeSend();
    assert.equal(call.receive(), undefined);
    assert.equal(text(call.trailers()[0][1]), '0');
    call.drop();
    assert.equal(fake.streams[0].disposed, true);
    assert.deepEqual(fake.streams[0].opened.timeoutMs, 3000);
    assert.throws(() => call.send(new Uint8Array(0)), /dropped/);
  });
});

describe('options', () => {
  // The instance reads its environment once: every case has a name of its own, set up front.
  const given = {
    URL_GIVEN: ' ws://h/echo ', USERS_GIVEN: ' 12 ', PAUSE_GIVEN: '1m1.5s', RATIO_GIVEN: '1e-1', VERBOSE_GIVEN: 'Yes',
    TOKEN_GIVEN: ' x ', BAD_INT: 'ten', BIG_INT: '9007199254740993', HUGE_INT: '99999999999999999999', BAD_PAUSE: '5',
    BAD_URL: '127.0.0.1:8080', BAD_BOOL: 'maybe', BAD_RATIO: 'inf',
  };
  fake.env = Object.entries(given);
  loadhost.declareOptions(
    'TARGET_URL:url=http://127.0.0.1:8080/ "the page to GET"',
    "USERS:int! 'how many users'",
    'PAUSE:duration=1m30s',
    'RATIO:float=0.5',
    'VERBOSE:bool=off "it\'s chatty"',
    "GREETING:string='hello world'",
    'TOKEN:string',
    'URL_GIVEN:url', 'USERS_GIVEN:int', 'PAUSE_GIVEN:duration', 'RATIO_GIVEN:float', 'VERBOSE_GIVEN:bool', 'TOKEN_GIVEN:string',
    'BAD_INT:int', 'BIG_INT:int', 'HUGE_INT:int', 'BAD_PAUSE:duration', 'BAD_URL:url', 'BAD_BOOL:bool', 'BAD_RATIO:float',
  );

  test('defaults come from the declaration and values read by its type', () => {
    assert.equal(loadhost.env('TARGET_URL'), 'http://127.0.0.1:8080/');
    assert.equal(loadhost.env('PAUSE'), 90_000);
    assert.equal(loadhost.env('RATIO'), 0.5);
    assert.equal(loadhost.env('VERBOSE'), false);
    assert.equal(loadhost.env('GREETING'), 'hello world');
    assert.equal(loadhost.env('TOKEN'), undefined);
    assert.equal(loadhost.env('URL_GIVEN'), 'ws://h/echo');
    assert.equal(loadhost.env('USERS_GIVEN'), 12);
    assert.equal(loadhost.env('PAUSE_GIVEN'), 61_500);
    assert.equal(loadhost.env('RATIO_GIVEN'), 0.1);
    assert.equal(loadhost.env('VERBOSE_GIVEN'), true);
    assert.equal(loadhost.env('TOKEN_GIVEN'), ' x ', 'a string as given');
    assert.equal(loadhost.env('UNDECLARED'), undefined);
    assert.equal(loadhost.takeBadSetting(), null);
  });

  test("the user's mistakes abort with the message every SDK gives", () => {
    assert.throws(() => loadhost.env('USERS'), (e) => e instanceof loadhost.ConfigError && e.kind === 'abort'
      && e.message === '-e USERS is required (int: how many users)');
    assert.equal(loadhost.takeBadSetting(), '-e USERS is required (int: how many users)');
    for (const [name, expected] of [
      ['BAD_INT', 'an integer'],
      ['BIG_INT', 'an integer from -9007199254740991 to 9007199254740991'],
      ['HUGE_INT', 'an integer from -9223372036854775808 to 9223372036854775807'],
      ['BAD_PAUSE', 'a duration such as 500ms, 5s, 1.5m, 2h or 1m30s'],
      ['BAD_URL', 'an absolute URL such as http://127.0.0.1:8080/'],
      ['BAD_BOOL', 'a boolean (true/false, 1/0, yes/no, on/off)'],
      ['BAD_RATIO', 'a number'],
    ]) {
      const message = `${name}=${given[name]}: expected ${expected}`;
      assert.throws(() => loadhost.env(name), (e) => e instanceof loadhost.ConfigError && e.message === message, name);
      assert.equal(loadhost.takeBadSetting(), message);
    }
  });

  test('a declared option takes its default from the declaration only', () => {
    assert.throws(() => loadhost.envOr('RATIO', 0.7), /envOr\('RATIO', 0.7\): RATIO is declared with declareOptions/);
  });

  test('declarations are checked as the host checks them', () => {
    for (const [declaration, says] of [
      ['USERS', 'expected NAME:TYPE'],
      ['9LIVES:int', "an option's name"],
      ['USERS:integer', "unknown type 'integer' (string, int, float, bool, duration, url)"],
      ['X:int!=5', "a required option ('!') has no default"],
      ['X:int=ten', 'its default is not an integer'],
      ['X:duration=5', 'its default is not a duration'],
      ['X:url=localhost', 'its default is not an absolute URL'],
      ['X:int=', "nothing after '='"],
      ["X:int='5", "a default's quote is not closed"],
      ["X:string=it's", 'quoted as a whole'],
      ['X:int how many', 'the help goes last, in quotes'],
      ["X:int 'how' many", "'many' after the help"],
      ['USERS:int=5', 'USERS is declared already, differently'],
    ]) {
      assert.throws(() => loadhost.declareOptions(declaration),
        (e) => e instanceof RangeError && e.message.startsWith(`declareOptions('${declaration}'): `) && e.message.includes(says),
        declaration);
    }
    assert.throws(() => loadhost.declareOptions(7), /got number 7/);
    loadhost.declareOptions('USERS:int! "how many users"');
  });

  test('durations read as the host reads them', () => {
    for (const [text, ms] of [['500ms', 500], ['5s', 5000], ['1.5m', 90_000], ['2h', 7_200_000], ['1m30s', 90_000]]) {
      assert.equal(loadhost.durationMs(text), ms, text);
    }
    for (const text of ['', '5', '5x', '1 s', '-1s', '1e3s', '1..5s', '99999999999h']) {
      assert.equal(loadhost.durationMs(text), undefined, text);
    }
  });
});
