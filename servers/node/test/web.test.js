// GraphQL, Connect and gRPC-Web (contract/README.md) against the real server
// on 127.0.0.1:0, clear text or (PB_TEST_TLS_CERT/KEY) TLS: a call of each
// form, and the contract's answers to bad input (GraphQL errors, the depth
// and field limits, a body that is no GraphQL request, wrong content types
// and methods, oversized bodies; Connect's error codes and statuses).
// `protobench verify` checks every workload's content; these check what the
// server decides on its own.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createClient, ConnectError, Code } from '@connectrpc/connect';
import { createConnectTransport, createGrpcWebTransport } from '@connectrpc/connect-node';
import { TLS, startServer, h1, pbType } from './lib.js';
import { Streams } from '../gen/protobench/v1/stream_pb.js';

const mode = TLS ? 'tls' : 'clear';
const MAX_BYTES = 200000;
const EchoMessage = pbType('protobench.v1.EchoMessage');
const pb = (T, obj) => Buffer.from(T.encode(T.fromObject(obj)).finish());

const gql = (addr, body, headers = { 'content-type': 'application/json' }) => h1(addr, {
  method: 'POST', path: '/graphql', headers, body: typeof body === 'string' ? body : JSON.stringify(body),
});

describe(`GraphQL, Connect and gRPC-Web (${mode})`, () => {
  let srv;
  before(async () => {
    srv = await startServer({
      PROTOBENCH_REST_ADDR: '', PROTOBENCH_REST_H2_ADDR: '', PROTOBENCH_GRPC_ADDR: '', PROTOBENCH_SOAP_ADDR: '',
      PROTOBENCH_GRAPHQL_ADDR: '127.0.0.1:0', PROTOBENCH_CONNECT_ADDR: '127.0.0.1:0',
      PROTOBENCH_CONNECT_JSON_ADDR: '127.0.0.1:0', PROTOBENCH_GRPC_WEB_ADDR: '127.0.0.1:0',
      PROTOBENCH_MAX_REQUEST_BYTES: String(MAX_BYTES),
    });
  });
  after(async () => {
    const r = await srv.stop();
    assert.equal(r.code, 0, srv.stderr());
  });

  it('GraphQL: selected fields only, several root fields in one request', async () => {
    const r = await gql(srv.addr.graphql, { query: '{ inventoryS { serviceName } integer { value } }' });
    assert.equal(r.status, 200);
    const body = JSON.parse(r.body);
    assert.deepEqual(Object.keys(body.data.inventoryS), ['serviceName']);
    assert.deepEqual(body.data.integer, { value: 2147483647 });
    const m = await gql(srv.addr.graphql, { query: 'mutation($p: String!) { echo(input: {payload: $p}) { payload } }', variables: { p: 'héllo' } });
    assert.deepEqual(JSON.parse(m.body), { data: { echo: { payload: 'héllo' } } });
  });

  it('GraphQL: invalid values and unknown files are GraphQL errors with data null and a code', async () => {
    let r = await gql(srv.addr.graphql, { query: 'mutation { cloneText(input: {text: "a", times: -1}) { texts } }' });
    assert.equal(r.status, 200);
    let body = JSON.parse(r.body);
    assert.equal(body.data, null);
    assert.equal(body.errors[0].message, 'times must be in 0..100000');
    assert.equal(body.errors[0].extensions.code, 'INVALID_ARGUMENT');
    r = await gql(srv.addr.graphql, { query: '{ file(name: "nope") { name } }' });
    body = JSON.parse(r.body);
    assert.equal(body.data, null);
    assert.equal(body.errors[0].extensions.code, 'NOT_FOUND');
    // an unknown input member is refused by validation, before anything runs
    r = await gql(srv.addr.graphql, { query: 'mutation { echo(input: {payload: "a", nope: 1}) { payload } }' });
    body = JSON.parse(r.body);
    assert.equal(body.data, null);
    assert.match(body.errors[0].message, /nope/);
  });

  it('GraphQL: a document deeper than 16 or selecting more than 256 fields is refused', async () => {
    const deep = `{ __schema { types { ${'fields { type { '.repeat(8)}name${' } }'.repeat(8)} } } }`;
    let body = JSON.parse((await gql(srv.addr.graphql, { query: deep })).body);
    assert.equal(body.data, null);
    assert.match(body.errors[0].message, /nested 19 deep, more than the limit of 16/);
    const wide = `{ ${Array.from({ length: 86 }, (_, i) => `a${i}: inventoryS { serviceName regionCode }`).join(' ')} }`;
    body = JSON.parse((await gql(srv.addr.graphql, { query: wide })).body);
    assert.match(body.errors[0].message, /selects 258 fields, more than the limit of 256/);
    const ok = `{ ${Array.from({ length: 85 }, (_, i) => `a${i}: inventoryS { serviceName regionCode }`).join(' ')} }`;
    body = JSON.parse((await gql(srv.addr.graphql, { query: ok })).body);
    assert.equal(body.errors, undefined, '255 fields are allowed');
  });

  it('GraphQL: no GraphQL request 400, other content types 415, other methods 405, over the limit 413', async () => {
    let r = await gql(srv.addr.graphql, { querx: '{ integer { value } }' });
    assert.equal(r.status, 400);
    assert.match(JSON.parse(r.body).message, /^the body is not a GraphQL request .*Missing query/);
    r = await gql(srv.addr.graphql, '{"query": ');
    assert.equal(r.status, 400);
    r = await gql(srv.addr.graphql, '{}', { 'content-type': 'text/plain' });
    assert.equal(r.status, 415);
    r = await h1(srv.addr.graphql, { method: 'PUT', path: '/graphql' });
    assert.equal(r.status, 405);
    assert.equal(r.headers.allow, 'GET, POST');
    // GET serves persisted queries (test/graphqlget.test.js); without a
    // hash or a query it is a 400
    r = await h1(srv.addr.graphql, { path: '/graphql' });
    assert.equal(r.status, 400);
    r = await gql(srv.addr.graphql, { query: `{ integer { value } } # ${'x'.repeat(MAX_BYTES)}` });
    assert.equal(r.status, 413);
    r = await h1(srv.addr.graphql, { path: '/v1/echo' });
    assert.equal(r.status, 404);
  });

  it('Connect: protobuf and JSON bodies answered in kind; errors as Connect codes and statuses', async () => {
    const call = (addr, type, body, p = '/protobench.v1.Bench/Echo') => h1(addr, {
      method: 'POST', path: p, headers: { 'content-type': type, 'connect-protocol-version': '1' }, body,
    });
    let r = await call(srv.addr.connect, 'application/proto', pb(EchoMessage, { payload: 'abc' }));
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'application/proto');
    assert.equal(EchoMessage.decode(r.body).payload, 'abc');
    r = await call(srv.addr['connect-json'], 'application/json', JSON.stringify({ payload: 'déf' }));
    assert.equal(r.status, 200);
    assert.deepEqual(JSON.parse(r.body), { payload: 'déf' });
    r = await call(srv.addr.connect, 'application/json', JSON.stringify({ text: 'a', times: -1 }), '/protobench.v1.Bench/CloneText');
    assert.equal(r.status, 400);
    assert.deepEqual(JSON.parse(r.body), { code: 'invalid_argument', message: 'times must be in 0..100000' });
    r = await call(srv.addr.connect, 'application/json', JSON.stringify({ name: 'nope' }), '/protobench.v1.Bench/GetFile');
    assert.equal(r.status, 404);
    assert.equal(JSON.parse(r.body).code, 'not_found');
    r = await call(srv.addr.connect, 'application/json', JSON.stringify({ payload: 'x'.repeat(MAX_BYTES) }));
    assert.equal(r.status, 429);
    assert.equal(JSON.parse(r.body).code, 'resource_exhausted');
  });

  it('streams over Connect and gRPC-Web (connect-es client): subscription, upload, poll; bad input', async () => {
    for (const [proto, make] of [['connect', createConnectTransport], ['grpc-web', createGrpcWebTransport]]) {
      const transport = make({
        baseUrl: `${TLS ? 'https' : 'http'}://${TLS ? 'localhost' : '127.0.0.1'}:${srv.addr[proto].split(':')[1]}`,
        httpVersion: '1.1',
        nodeOptions: TLS ? { ca: TLS.ca } : {},
      });
      const client = createClient(Streams, transport);
      const events = [];
      for await (const e of client.subscribe({ count: 4, items: 2, rate: 500 })) events.push(e);
      assert.deepEqual(events.map((e) => e.seq), [1, 2, 3, 4], proto);
      assert.deepEqual(events.map((e) => e.scheduledNs - events[0].scheduledNs), [0n, 2000000n, 4000000n, 6000000n]);
      assert.equal(events[3].items.length, 2);
      await assert.rejects(async () => { for await (const _ of client.subscribe({ count: 0 })) { /* none */ } }, (e) => {
        assert.ok(e instanceof ConnectError);
        assert.equal(e.code, Code.InvalidArgument);
        assert.equal(e.rawMessage, 'count is 0, expected 1..=1000000');
        return true;
      });
      const page = await client.poll({ count: 3, items: 1, max: 2 });
      assert.deepEqual(page.events.map((e) => e.seq), [1, 2]);
      assert.equal(page.done, false);
      if (proto === 'connect') {
        async function* messages() { yield { seq: 1, payload: 'a' }; yield { seq: 2, payload: 'b' }; }
        const summary = await client.upload(messages());
        assert.deepEqual([summary.count, summary.bytes, summary.checksum], [2, 2n, 1294271946]);
      }
    }
  });

  it('gRPC-Web: a framed message and the trailer frame; the text form is refused (not served)', async () => {
    const msg = pb(EchoMessage, { payload: 'web' });
    const frame = Buffer.concat([Buffer.from([0, 0, 0, 0, msg.length]), msg]);
    const r = await h1(srv.addr['grpc-web'], {
      method: 'POST', path: '/protobench.v1.Bench/Echo', headers: { 'content-type': 'application/grpc-web+proto' }, body: frame,
    });
    assert.equal(r.status, 200);
    assert.equal(r.body[0], 0);
    const len = r.body.readUInt32BE(1);
    assert.equal(EchoMessage.decode(r.body.subarray(5, 5 + len)).payload, 'web');
    const trailer = r.body.subarray(5 + len);
    assert.equal(trailer[0], 0x80);
    assert.match(trailer.subarray(5).toString(), /grpc-status: ?0/);
    const t = await h1(srv.addr['grpc-web'], {
      method: 'POST', path: '/protobench.v1.Bench/Echo', headers: { 'content-type': 'application/grpc-web-text' }, body: frame.toString('base64'),
    });
    assert.equal(t.status, 415);
  });
});
