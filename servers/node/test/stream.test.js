// The streaming operations (contract/README.md "Streaming") against the real
// server on 127.0.0.1:0, clear text or (PB_TEST_TLS_CERT/KEY) TLS: gRPC
// streams (grpc-js client), WebSocket (the `ws` client), SSE and polling
// (HTTP/1.1 and HTTP/2), with the bad input the contract names: oversized
// messages, out-of-range feeds, malformed frames and query parameters, the
// idle timeout, an injected failure before the first message.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';
import grpc from '@grpc/grpc-js';
import fs from 'node:fs';
import path from 'node:path';
import { TLS, startServer, h1, h2, grpcClient, pbType, contractDir } from './lib.js';

const mode = TLS ? 'tls' : 'clear';
const dataset = JSON.parse(fs.readFileSync(path.join(contractDir, 'data', 'dataset.json'), 'utf8'));
const MAX_BYTES = 100000;
const IDLE_MS = 2000;

const nowNs = () => BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e3)) * 1000n;

function fnv1a(payloads) {
  let h = 0x811c9dc5;
  for (const p of payloads) for (const b of Buffer.from(p, 'utf8')) h = Math.imul(h ^ b, 0x01000193);
  return h >>> 0;
}

// ---------------------------------------------------------------- WebSocket

// Opens a WebSocket; collects every message and the close code/reason.
function wsOpen(addr, path) {
  const url = `${TLS ? 'wss' : 'ws'}://${addr}${path}`;
  const ws = new WebSocket(url, TLS ? { ca: TLS.ca, servername: 'localhost' } : {});
  const got = [];
  const closed = new Promise((resolve, reject) => {
    ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() }));
    ws.on('error', reject);
  });
  ws.on('message', (data, isBinary) => got.push({ data, isBinary }));
  const opened = new Promise((resolve, reject) => {
    ws.on('open', resolve);
    ws.on('unexpected-response', (_req, res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode, body: Buffer.concat(chunks).toString() })));
    });
    ws.on('error', reject);
  });
  return { ws, got, closed, opened };
}

const StreamMessage = pbType('protobench.v1.StreamMessage');
const SubscribeRequest = pbType('protobench.v1.SubscribeRequest');
const FeedEvent = pbType('protobench.v1.FeedEvent');
const UploadSummary = pbType('protobench.v1.UploadSummary');
const pb = (T, obj) => Buffer.from(T.encode(T.fromObject(obj)).finish());

// SSE: the events of a whole response body.
function parseSse(text) {
  return text.split('\n\n').filter((b) => b.trim() !== '').map((block) => {
    const ev = {};
    for (const line of block.split('\n')) {
      const i = line.indexOf(': ');
      ev[line.slice(0, i)] = line.slice(i + 2);
    }
    return ev;
  });
}

describe(`streaming (${mode})`, () => {
  let srv;
  before(async () => {
    srv = await startServer({ PROTOBENCH_MAX_REQUEST_BYTES: String(MAX_BYTES), PROTOBENCH_IDLE_TIMEOUT: `${IDLE_MS}ms` });
  });
  after(async () => {
    const r = await srv.stop();
    assert.equal(r.code, 0, srv.stderr());
  });

  it('websocket echo answers text with JSON and binary with protobuf, in order, and every message sent before the close', async () => {
    const c = wsOpen(srv.addr.rest, '/v1/stream/ws/echo');
    await c.opened;
    const sent = [];
    for (let seq = 1; seq <= 20; seq++) {
      const m = { seq, payload: `p${seq}-é` };
      sent.push(m);
      if (seq % 2) c.ws.send(JSON.stringify(m)); else c.ws.send(pb(StreamMessage, m));
    }
    c.ws.close(1000); // at once: the echoes of all 20 must still come first
    const end = await c.closed;
    assert.equal(end.code, 1000);
    assert.equal(c.got.length, 20);
    c.got.forEach((g, i) => {
      assert.equal(g.isBinary, i % 2 === 1, `frame type of reply ${i + 1}`);
      const m = g.isBinary ? StreamMessage.toObject(StreamMessage.decode(g.data)) : JSON.parse(g.data.toString());
      assert.deepEqual({ seq: m.seq, payload: m.payload }, sent[i]);
    });
  });

  it('websocket: a message over the size limit is refused with 1009', async () => {
    const c = wsOpen(srv.addr.rest, '/v1/stream/ws/echo');
    await c.opened;
    c.ws.send(JSON.stringify({ seq: 1, payload: 'x'.repeat(MAX_BYTES) }));
    const end = await c.closed;
    assert.equal(end.code, 1009);
    assert.equal(c.got.length, 0);
  });

  for (const [what, frame, reason] of [
    ['malformed JSON', 'not json', /malformed JSON/],
    ['an unknown member', JSON.stringify({ seq: 1, nope: 2 }), /nope: unknown field/],
    ['undecodable protobuf', Buffer.from([0x0a, 0x05, 0x61]), /undecodable protobench.v1.StreamMessage message/],
  ]) {
    it(`websocket echo: ${what} closes with 1007 naming the problem`, async () => {
      const c = wsOpen(srv.addr.rest, '/v1/stream/ws/echo');
      await c.opened;
      c.ws.send(frame);
      const end = await c.closed;
      assert.equal(end.code, 1007);
      assert.match(end.reason, reason);
    });
  }

  for (const [req, reason] of [
    [{ count: 0, items: 1 }, 'count is 0, expected 1..=1000000'],
    [{ count: 1000001 }, 'count is 1000001, expected 1..=1000000'],
    [{ count: 1, items: 1396 }, 'items is 1396, expected 0..=1395'],
    [{ count: 1, rate: 1000001 }, 'rate is 1000001, expected 0 (as fast as possible) ..=1000000'],
  ]) {
    it(`websocket subscribe: ${JSON.stringify(req)} closes with 1007`, async () => {
      const c = wsOpen(srv.addr.rest, '/v1/stream/ws/subscribe');
      await c.opened;
      c.ws.send(JSON.stringify(req));
      const end = await c.closed;
      assert.equal(end.code, 1007);
      assert.equal(end.reason, reason);
    });
  }

  it('websocket subscribe sends the feed in the request\'s frame type, stamped on schedule, then 1000', async () => {
    const c = wsOpen(srv.addr.rest, '/v1/stream/ws/subscribe');
    await c.opened;
    c.ws.send(pb(SubscribeRequest, { count: 5, items: 3, rate: 200 }));
    const end = await c.closed;
    assert.equal(end.code, 1000);
    assert.equal(c.got.length, 5);
    const events = c.got.map((g) => { assert.ok(g.isBinary); return FeedEvent.toObject(FeedEvent.decode(g.data), { longs: String }); });
    const first = BigInt(events[0].scheduled_ns); // pbType keeps the proto field names
    events.forEach((e, i) => {
      assert.equal(e.seq, i + 1);
      assert.equal(e.items.length, 3);
      assert.equal(BigInt(e.scheduled_ns) - first, BigInt(i) * 5000000n, `stamp of event ${i + 1}`);
    });
    // event seq carries the dataset's items (seq - 1) * 3 + j
    assert.deepEqual(events.map((e) => e.items.map((it) => it.id)), events.map((_, i) => [0, 1, 2].map((j) => dataset.items[i * 3 + j].id)));
  });

  it('websocket upload: summary of count, bytes and FNV-1a, then 1000', async () => {
    const c = wsOpen(srv.addr.rest, '/v1/stream/ws/upload');
    await c.opened;
    const payloads = ['abc', 'déf', 'x'.repeat(5000)];
    payloads.forEach((payload, i) => c.ws.send(pb(StreamMessage, { seq: i + 1, payload })));
    c.ws.send(Buffer.alloc(0));
    const end = await c.closed;
    assert.equal(end.code, 1000);
    assert.equal(c.got.length, 1);
    const s = UploadSummary.toObject(UploadSummary.decode(c.got[0].data), { longs: String });
    assert.deepEqual(s, { count: 3, bytes: String(3 + 4 + 5000), checksum: fnv1a(payloads) });
  });

  it('websocket: no message for the idle timeout closes with 1008, not before', async () => {
    const c = wsOpen(srv.addr.rest, '/v1/stream/ws/upload');
    await c.opened;
    const t0 = Date.now();
    const end = await c.closed;
    const took = Date.now() - t0;
    assert.equal(end.code, 1008);
    assert.ok(took >= IDLE_MS * 0.9, `closed after ${took} ms`);
  });

  it('a WebSocket path without an upgrade gets the contract\'s JSON error; other methods 405', async () => {
    const r = await h1(srv.addr.rest, { path: '/v1/stream/ws/echo' });
    assert.equal(r.status, 426);
    assert.match(JSON.parse(r.body).message, /WebSocket upgrade/);
    const p = await h1(srv.addr.rest, { method: 'POST', path: '/v1/stream/sse' });
    assert.equal(p.status, 405);
    assert.equal(p.headers.allow, 'GET, HEAD');
    // HEAD of a feed that would run for days: the headers, at once
    const h = await h1(srv.addr.rest, { method: 'HEAD', path: '/v1/stream/sse?count=1000000&rate=1' });
    assert.equal(h.status, 200);
    assert.match(h.headers['content-type'], /^text\/event-stream/);
  });

  // ------------------------------------------------------------ SSE, polling

  for (const [proto, get] of [['rest', h1], ['rest-h2', h2]]) {
    it(`SSE on ${proto}: events with id and canonical JSON, the end event, Last-Event-ID resumes`, async () => {
      const r = await get(srv.addr[proto], { path: '/v1/stream/sse?count=4&items=2&rate=500' });
      assert.equal(r.status, 200);
      assert.match(r.headers['content-type'], /^text\/event-stream/);
      const evs = parseSse(r.body.toString());
      assert.equal(evs.length, 5);
      evs.slice(0, 4).forEach((e, i) => {
        assert.equal(e.id, String(i + 1));
        assert.equal(e.event, 'feed');
        const d = JSON.parse(e.data);
        assert.equal(d.seq, i + 1);
        assert.equal(typeof d.scheduledNs, 'string');
        assert.equal(BigInt(d.scheduledNs) - BigInt(JSON.parse(evs[0].data).scheduledNs), BigInt(i) * 2000000n);
      });
      assert.deepEqual(evs[4], { event: 'end', data: '{"count":4}' });
      const again = await get(srv.addr[proto], { path: '/v1/stream/sse?count=4&rate=500', headers: { 'last-event-id': '2' } });
      assert.deepEqual(parseSse(again.body.toString()).map((e) => e.id ?? e.event), ['3', '4', 'end']);
    });

    for (const [query, message] of [
      ['count=0', 'count is 0, expected 1..=1000000'],
      ['count=1&count=2', 'query parameter count is given twice'],
      ['count=1&colour=2', 'unknown query parameter "colour"; expected count, items, rate'],
      ['count=x', 'query parameter count is "x", expected a non-negative decimal integer'],
      ['count=1&items=5000', 'items is 5000, expected 0..=1395'],
    ]) {
      it(`SSE on ${proto}: ${query} -> 400`, async () => {
        const r = await get(srv.addr[proto], { path: `/v1/stream/sse?${query}` });
        assert.equal(r.status, 400);
        assert.deepEqual(JSON.parse(r.body), { code: 400, message });
      });
    }
  }

  it('polling: the due events, at most max, done on the last; bad parameters 400', async () => {
    const page = async (q) => h1(srv.addr.rest, { path: `/v1/stream/poll?${q}` });
    let r = await page('count=5&items=1&after=0&max=3');
    assert.equal(r.status, 200);
    let p = JSON.parse(r.body);
    assert.deepEqual(p.events.map((e) => e.seq), [1, 2, 3]);
    assert.equal(p.done, false);
    r = await page('count=5&items=1&after=3&max=3');
    p = JSON.parse(r.body);
    assert.deepEqual(p.events.map((e) => e.seq), [4, 5]);
    assert.equal(p.done, true);
    // rate 1 from now: only the first event is due
    r = await page(`count=5&rate=1&startNs=${nowNs()}&max=5`);
    assert.deepEqual(JSON.parse(r.body).events.map((e) => e.seq), [1]);
    // 16,384 items a page at most: 1,395 items an event -> 11 events
    r = await page('count=100&items=1395&max=100');
    assert.equal(JSON.parse(r.body).events.length, 11);
    for (const [q, message] of [
      ['count=5&max=0', 'max is 0, expected 1..=1000'],
      ['count=5&max=1&rate=10', 'startNs is 0, expected the feed\'s start in ns since the Unix epoch (> 0 when rate > 0)'],
      ['count=5&max=1&after=6', 'after is 6, beyond the feed\'s count 5'],
    ]) {
      r = await page(q);
      assert.equal(r.status, 400, q);
      assert.equal(JSON.parse(r.body).message, message);
    }
  });

  // ------------------------------------------------------------ gRPC

  const rpc = (method) => `/protobench.v1.Streams/${method}`;
  const ser = (T) => (obj) => pb(T, obj);
  const des = (T) => (buf) => T.toObject(T.decode(buf), { longs: String });

  it('gRPC Subscribe: count events on schedule, never before their stamp, then OK', async () => {
    const client = grpcClient(srv.addr.grpc);
    const call = client.makeServerStreamRequest(rpc('Subscribe'), ser(SubscribeRequest), des(FeedEvent), { count: 5, items: 1, rate: 100 });
    const got = [];
    call.on('data', (e) => got.push({ e, at: nowNs() }));
    const status = await new Promise((resolve) => call.on('status', resolve));
    client.close();
    assert.equal(status.code, grpc.status.OK);
    assert.deepEqual(got.map((g) => g.e.seq), [1, 2, 3, 4, 5]);
    for (const { e, at } of got) {
      // one host, one clock; 1 ms allows for the two processes' readings of it
      assert.ok(at >= BigInt(e.scheduled_ns) - 1000000n, `event ${e.seq} arrived before its stamp`);
    }
  });

  it('gRPC Subscribe: an out-of-range request is INVALID_ARGUMENT naming the value', async () => {
    const client = grpcClient(srv.addr.grpc);
    const call = client.makeServerStreamRequest(rpc('Subscribe'), ser(SubscribeRequest), des(FeedEvent), { count: 0 });
    call.on('data', () => assert.fail('no event expected'));
    const status = await new Promise((resolve) => { call.on('status', resolve); call.on('error', () => {}); });
    client.close();
    assert.equal(status.code, grpc.status.INVALID_ARGUMENT);
    assert.equal(status.details, 'count is 0, expected 1..=1000000');
  });

  it('gRPC EchoStream echoes in order; a message over the limit is RESOURCE_EXHAUSTED, a malformed one INVALID_ARGUMENT', async () => {
    const client = grpcClient(srv.addr.grpc);
    const echo = (messages) => {
      const call = client.makeBidiStreamRequest(rpc('EchoStream'), (b) => b, des(StreamMessage));
      const got = [];
      call.on('data', (m) => got.push(m));
      call.on('error', () => {});
      const status = new Promise((resolve) => call.on('status', resolve));
      for (const m of messages) call.write(m);
      call.end();
      return status.then((s) => ({ status: s, got }));
    };
    const msgs = [1, 2, 3].map((seq) => ({ seq, payload: 'y'.repeat(seq * 1000) }));
    let r = await echo(msgs.map((m) => pb(StreamMessage, m)));
    assert.equal(r.status.code, grpc.status.OK);
    assert.deepEqual(r.got, msgs);
    r = await echo([pb(StreamMessage, { seq: 1, payload: 'z'.repeat(MAX_BYTES) })]);
    assert.equal(r.status.code, grpc.status.RESOURCE_EXHAUSTED);
    r = await echo([pb(StreamMessage, { seq: 1, payload: 'a' }), Buffer.from([0x12, 0x09, 0x61])]);
    assert.equal(r.status.code, grpc.status.INVALID_ARGUMENT);
    assert.match(r.status.details, /undecodable protobench.v1.StreamMessage message/);
    client.close();
  });

  it('gRPC Upload answers the summary; Poll a page', async () => {
    const client = grpcClient(srv.addr.grpc);
    const payloads = ['one', 'twö', ''];
    const summary = await new Promise((resolve, reject) => {
      const call = client.makeClientStreamRequest(rpc('Upload'), ser(StreamMessage), des(UploadSummary), (err, res) => (err ? reject(err) : resolve(res)));
      payloads.forEach((payload, i) => call.write({ seq: i + 1, payload }));
      call.end();
    });
    assert.deepEqual(summary, { count: 3, bytes: '7', checksum: fnv1a(payloads) });
    const PollRequest = pbType('protobench.v1.PollRequest');
    const FeedPage = pbType('protobench.v1.FeedPage');
    const page = await new Promise((resolve, reject) => {
      client.makeUnaryRequest(rpc('Poll'), ser(PollRequest), des(FeedPage), { count: 3, items: 2, max: 10 }, (err, res) => (err ? reject(err) : resolve(res)));
    });
    assert.deepEqual(page.events.map((e) => e.seq), [1, 2, 3]);
    assert.equal(page.done, true);
    client.close();
  });
});

describe(`streaming: injected failure before the first message (${mode})`, () => {
  let srv;
  before(async () => { srv = await startServer({ PROTOBENCH_FAILURE_RATE: '1' }); });
  after(async () => { await srv.stop(); });

  it('WebSocket upgrade and SSE get HTTP 500 with the JSON error; gRPC UNAVAILABLE', async () => {
    const c = wsOpen(srv.addr.rest, '/v1/stream/ws/echo');
    c.closed.catch(() => {});
    const err = await c.opened.then(() => null, (e) => e);
    assert.equal(err?.status, 500);
    assert.deepEqual(JSON.parse(err.body), { code: 500, message: 'injected failure' });
    const r = await h1(srv.addr.rest, { path: '/v1/stream/sse?count=3' });
    assert.equal(r.status, 500);
    assert.equal(JSON.parse(r.body).message, 'injected failure');
    const client = grpcClient(srv.addr.grpc);
    const call = client.makeServerStreamRequest('/protobench.v1.Streams/Subscribe', (o) => pb(SubscribeRequest, o), (b) => b, { count: 3 });
    call.on('data', () => assert.fail('no event expected'));
    call.on('error', () => {});
    const status = await new Promise((resolve) => call.on('status', resolve));
    client.close();
    assert.equal(status.code, grpc.status.UNAVAILABLE);
    assert.equal(status.details, 'injected failure');
  });
});

