// src/apq.js without processes: the bounded store's eviction and the
// cluster primary's relay (every ready worker stores a registration before
// the registering worker is answered; a worker that exits is not waited
// for; a worker that becomes ready later gets the store first). The relay
// across real cluster workers is tested in test/graphqlget.test.js.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DocumentStore, MAX_DOCUMENTS, primaryRelay, sha256Hex } from '../src/apq.js';

function fakeWorker(id) {
  return { id, inbox: [], connected: true, isConnected() { return this.connected; }, send(msg) { this.inbox.push(msg); } };
}

describe('APQ document store and cluster relay', () => {
  it('sha256Hex is the lowercase hex SHA-256 of the UTF-8 text', () => {
    assert.equal(sha256Hex('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    assert.equal(sha256Hex('é'), '4a99557e4033c3539de2eb65472017cad5f9557f7a0625a09f1c3f6e2ba69c4c');
    assert.notEqual(sha256Hex('é'), sha256Hex('e\u0301'), 'the text as sent, not normalized');
  });

  it('holds at most 1,000 documents, evicting the oldest registration; re-registering changes nothing', () => {
    assert.equal(MAX_DOCUMENTS, 1000);
    const s = new DocumentStore();
    for (let i = 0; i < 1000; i++) s.put(`h${i}`, `q${i}`);
    assert.equal(s.size, 1000);
    s.put('h0', 'q0'); // known: not moved to the newest place
    assert.equal(s.get('h0'), 'q0');
    s.put('h1000', 'q1000');
    assert.equal(s.size, 1000);
    assert.equal(s.has('h0'), false);
    assert.equal(s.get('h1'), 'q1');
    assert.equal(s.get('h1000'), 'q1000');
  });

  it('holds at most maxChars characters in all (a document alone may exceed it)', () => {
    const s = new DocumentStore({ maxDocuments: 10, maxChars: 10 });
    s.put('a', '1234');
    s.put('b', '1234');
    s.put('c', '123'); // 11 > 10: a goes
    assert.deepEqual(s.list().map(([h]) => h), ['b', 'c']);
    s.put('d', 'x'.repeat(25));
    assert.deepEqual(s.list().map(([h]) => h), ['d']);
    s.put('e', '1');
    assert.deepEqual(s.list().map(([h]) => h), ['e']);
  });

  it('the primary answers a registration only when every ready worker has stored it', () => {
    const relay = primaryRelay();
    const [w1, w2, w3] = [fakeWorker(1), fakeWorker(2), fakeWorker(3)];
    for (const w of [w1, w2, w3]) assert.equal(relay.onMessage(w, { type: 'apq-ready' }), true);
    assert.deepEqual(w1.inbox, [{ type: 'apq-sync', docs: [] }]);
    assert.equal(relay.onMessage(w1, { type: 'listening' }), false, 'other messages are not the relay\'s');
    relay.onMessage(w2, { type: 'apq-register', id: 7, hash: 'h', query: 'q' });
    for (const w of [w1, w2, w3]) assert.deepEqual(w.inbox.at(-1), { type: 'apq-store', hash: 'h', query: 'q', ack: 1 });
    const registered = (w) => w.inbox.some((m) => m.type === 'apq-registered');
    relay.onMessage(w2, { type: 'apq-stored', ack: 1 });
    relay.onMessage(w1, { type: 'apq-stored', ack: 1 });
    assert.equal(registered(w2), false, 'w3 has not stored it yet');
    relay.onMessage(w3, { type: 'apq-stored', ack: 1 });
    assert.deepEqual(w2.inbox.at(-1), { type: 'apq-registered', id: 7 });
    assert.equal(registered(w1) || registered(w3), false);
  });

  it('a worker that exits is not waited for; one ready later gets the store first', () => {
    const relay = primaryRelay();
    const [w1, w2] = [fakeWorker(1), fakeWorker(2)];
    relay.onMessage(w1, { type: 'apq-ready' });
    relay.onMessage(w2, { type: 'apq-ready' });
    relay.onMessage(w1, { type: 'apq-register', id: 1, hash: 'h1', query: 'q1' });
    relay.onMessage(w1, { type: 'apq-stored', ack: 1 });
    assert.equal(w1.inbox.at(-1).type, 'apq-store');
    w2.connected = false;
    relay.onExit(w2);
    assert.deepEqual(w1.inbox.at(-1), { type: 'apq-registered', id: 1 });
    // the replacement: the store so far, then later registrations
    const w3 = fakeWorker(3);
    relay.onMessage(w3, { type: 'apq-ready' });
    assert.deepEqual(w3.inbox, [{ type: 'apq-sync', docs: [['h1', 'q1']] }]);
    relay.onMessage(w3, { type: 'apq-register', id: 4, hash: 'h2', query: 'q2' });
    assert.equal(w2.inbox.some((m) => m.hash === 'h2'), false, 'nothing sent to a worker that exited');
    relay.onMessage(w3, { type: 'apq-stored', ack: 2 });
    assert.equal(w3.inbox.some((m) => m.type === 'apq-registered'), false, 'w1 has not stored it yet');
    relay.onMessage(w1, { type: 'apq-stored', ack: 2 });
    assert.deepEqual(w3.inbox.at(-1), { type: 'apq-registered', id: 4 });
  });
});
