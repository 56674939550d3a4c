// `graphql-get`: GraphQL persisted queries over GET (Apollo's APQ form,
// contract issue 34) against the real server on 127.0.0.1:0, clear text or
// (PB_TEST_TLS_CERT/KEY) TLS: every query workload with a GraphQL vector
// (hash unknown, registered by POST, then run by its hash alone), the
// refusals (wrong hash 400, mutation by GET 405, malformed parameters 400,
// other methods 405), the store's bound (1,000 documents, oldest evicted),
// with two cluster workers a registration seen by every worker, and the
// service time and injected failures as on `graphql`.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import { TLS, startServer, h1, contractDir, vectorsDir } from './lib.js';

const mode = TLS ? 'tls' : 'clear';
const MAX_BYTES = 200000;
const NOT_FOUND = '{"errors":[{"message":"PersistedQueryNotFound","extensions":{"code":"PERSISTED_QUERY_NOT_FOUND"}}]}';
const MISMATCH = '{"errors":[{"message":"provided sha does not match query"}]}';

const sha256 = (text) => crypto.createHash('sha256').update(text, 'utf8').digest('hex');
const ext = (hash, version = 1) => ({ persistedQuery: { version, sha256Hash: hash } });

// Every query workload with a GraphQL vector: the REST GET operations in
// vectors/ (documents starting with `query`) and contract/graphql/vectors/.
function queryWorkloads() {
  const out = [];
  for (const name of fs.readdirSync(vectorsDir).sort()) {
    const file = path.join(vectorsDir, name, 'request.graphql.json');
    if (!fs.existsSync(file)) continue;
    const request = JSON.parse(fs.readFileSync(file, 'utf8'));
    if (!request.query.startsWith('query')) continue;
    out.push({ name, request, response: fs.readFileSync(path.join(vectorsDir, name, 'response.graphql.json')) });
  }
  const gdir = path.join(contractDir, 'graphql', 'vectors');
  for (const name of fs.readdirSync(gdir).sort()) {
    out.push({
      name,
      request: JSON.parse(fs.readFileSync(path.join(gdir, name, 'request.json'), 'utf8')),
      response: fs.readFileSync(path.join(gdir, name, 'response.json')),
    });
  }
  return out;
}

// A GET query string. `plus`: spaces as `+` (URLSearchParams), otherwise
// as %20 (encodeURIComponent); `reverse`: the parameters in reverse order.
function search(params, { plus = false, reverse = false } = {}) {
  let entries = Object.entries(params).filter(([, v]) => v !== undefined)
    .map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]);
  if (reverse) entries = entries.reverse();
  if (plus) return new URLSearchParams(entries).toString();
  return entries.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&');
}

const get = (addr, params, opts = {}, agent = false) => h1(addr, { path: `/graphql?${search(params, opts)}`, agent });
const post = (addr, body, agent = false) => h1(addr, {
  method: 'POST', path: '/graphql', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), agent,
});

const clip = (b) => { const t = String(b); return t.length > 300 ? `${t.slice(0, 300)}... (${t.length} characters)` : t; };

// The body exactly `expected` (a failure shows both, clipped).
function assertBody(r, expected, msg = '') {
  const found = r.body.toString();
  assert.ok(found === expected, `${msg} body: expected ${clip(expected)}, found ${clip(found)}`);
}

// The body, as JSON, the value of `expected` (a failure names what differs, clipped).
function assertJsonBody(r, expected, msg = '') {
  const found = JSON.parse(r.body);
  const want = typeof expected === 'object' && !Buffer.isBuffer(expected) ? expected : JSON.parse(expected);
  try {
    assert.deepStrictEqual(found, want);
  } catch {
    assert.fail(`${msg} JSON differs: expected ${clip(JSON.stringify(want))}, found ${clip(r.body)}`);
  }
}

function assertJsonResponse(r, status, msg) {
  assert.equal(r.status, status, `${msg}: ${clip(r.body)}`);
  assert.match(r.headers['content-type'], /^application\/json/, msg);
}

// The message of a {"errors":[{"message"}]} body (and nothing else in it).
function errorMessage(r) {
  const body = JSON.parse(r.body);
  assert.deepEqual(Object.keys(body), ['errors'], String(r.body));
  assert.equal(body.errors.length, 1);
  return body.errors[0].message;
}

function keepAliveAgent() {
  return TLS
    ? new https.Agent({ keepAlive: true, maxSockets: 4, ca: TLS.ca, servername: 'localhost' })
    : new http.Agent({ keepAlive: true, maxSockets: 4 });
}

describe(`graphql-get: persisted queries over GET (${mode})`, () => {
  let srv;
  before(async () => {
    srv = await startServer({
      PROTOBENCH_REST_ADDR: '', PROTOBENCH_REST_H2_ADDR: '', PROTOBENCH_GRPC_ADDR: '', PROTOBENCH_SOAP_ADDR: '',
      PROTOBENCH_GRAPHQL_ADDR: '127.0.0.1:0', PROTOBENCH_GRAPHQL_GET_ADDR: '127.0.0.1:0',
      PROTOBENCH_MAX_REQUEST_BYTES: String(MAX_BYTES),
    });
  });
  after(async () => {
    const r = await srv.stop();
    assert.equal(r.code, 0, srv.stderr());
  });

  it('its own listening line, HTTP/1.1 (ALPN http/1.1 with TLS)', async () => {
    assert.ok(srv.lines.some((l) => l === `listening protocol=graphql-get addr=${srv.addr['graphql-get']} tls=${!!TLS}`), srv.lines.join('\n'));
    assert.notEqual(srv.addr['graphql-get'], srv.addr.graphql);
    const r = await get(srv.addr['graphql-get'], { query: '{ integer { value } }' });
    assert.equal(r.status, 200);
    if (TLS) assert.equal(r.alpn, 'http/1.1');
  });

  const workloads = queryWorkloads();
  it('the workloads: the REST GET operations and every GraphQL-only workload', () => {
    const names = workloads.map((w) => w.name);
    assert.ok(names.length >= 14, names.join(' '));
    for (const w of ['inventory.xs', 'inventory.l', 'tasks.file-455k', 'tasks.objects', 'graphql.dashboard', 'graphql.items-stock']) assert.ok(names.includes(w), w);
  });

  // Two workloads may send the same document (tasks.file-*: one document,
  // the file's name in variables): only the first finds its hash unknown.
  const registered = new Set();
  for (const [i, { name, request, response }] of workloads.entries()) {
    it(`${name}: unknown hash, registered by POST, then by hash alone the vector`, async () => {
      const addr = srv.addr['graphql-get'];
      const hash = sha256(request.query);
      const vars = Object.keys(request.variables).length > 0 ? request.variables : undefined;
      const opts = { plus: i % 2 === 0, reverse: i % 3 === 0 };
      const hashOnly = { operationName: request.operationName, variables: vars, extensions: ext(hash) };
      let r = await get(addr, hashOnly, opts);
      assertJsonResponse(r, 200, 'first GET');
      if (registered.has(hash)) assertJsonBody(r, response, 'a document registered by an earlier workload');
      else assertBody(r, NOT_FOUND, 'unknown hash');

      const reg = await post(addr, { ...request, extensions: ext(hash) });
      registered.add(hash);
      assertJsonResponse(reg, 200, 'registration');
      assertJsonBody(reg, response, 'the registration answers the vector');

      r = await get(addr, hashOnly, opts);
      assertJsonResponse(r, 200, 'known hash');
      assertJsonBody(r, response, 'the GET answers the vector');
      const plain = await post(srv.addr.graphql, request);
      assert.ok(r.body.equals(plain.body), 'byte for byte what POST /graphql answers');
    });
  }

  it('a registration on the graphql listener serves GETs on graphql-get; a GET may register with query', async () => {
    const q1 = 'query Ints { integers { values } }';
    let r = await post(srv.addr.graphql, { query: q1, extensions: ext(sha256(q1)) });
    assertJsonResponse(r, 200, 'POST on graphql');
    r = await get(srv.addr['graphql-get'], { extensions: ext(sha256(q1)) });
    assert.deepEqual(Object.keys(JSON.parse(r.body).data), ['integers']);
    // registration by GET, the space as `+`, variables absent
    const q2 = 'query Two { a: integer { value } b: integer { value } }';
    r = await get(srv.addr['graphql-get'], { query: q2, extensions: ext(sha256(q2)) }, { plus: true });
    assertJsonResponse(r, 200, 'GET registration');
    const expected = { data: { a: { value: 2147483647 }, b: { value: 2147483647 } } };
    assert.deepEqual(JSON.parse(r.body), expected);
    r = await get(srv.addr['graphql-get'], { extensions: ext(sha256(q2)) });
    assert.deepEqual(JSON.parse(r.body), expected);
    // ... and a POST with the hash alone runs it too, on either listener
    r = await post(srv.addr.graphql, { extensions: ext(sha256(q2)) });
    assert.deepEqual(JSON.parse(r.body), expected);
    // an upper-case hash names the same document
    r = await get(srv.addr['graphql-get'], { extensions: ext(sha256(q2).toUpperCase()) });
    assert.deepEqual(JSON.parse(r.body), expected);
  });

  it('a hash that does not match the query: 400, nothing stored', async () => {
    const q = 'query Mismatch { integer { value } }';
    const wrong = sha256(`${q} `);
    for (const r of [
      await get(srv.addr['graphql-get'], { query: q, extensions: ext(wrong) }),
      await post(srv.addr['graphql-get'], { query: q, extensions: ext(wrong) }),
      await post(srv.addr.graphql, { query: q, extensions: ext(wrong) }),
    ]) {
      assertJsonResponse(r, 400, 'mismatch');
      assertBody(r, MISMATCH);
    }
    const r = await get(srv.addr['graphql-get'], { extensions: ext(wrong) });
    assertBody(r, NOT_FOUND);
  });

  it('a mutation by GET: 405 with Allow: POST (registered by GET: not stored; by POST: runs there only)', async () => {
    const m = 'mutation M($p: String!) { echo(input: {payload: $p}) { payload } }';
    const hash = sha256(m);
    let r = await get(srv.addr['graphql-get'], { query: m, variables: { p: 'x' }, extensions: ext(hash) });
    assertJsonResponse(r, 405, 'GET registration of a mutation');
    assert.equal(r.headers.allow, 'POST');
    assert.ok(errorMessage(r).length > 0);
    r = await get(srv.addr['graphql-get'], { variables: { p: 'x' }, extensions: ext(hash) });
    assertBody(r, NOT_FOUND, 'a refused registration stores nothing');
    r = await post(srv.addr['graphql-get'], { query: m, variables: { p: 'héllo' }, extensions: ext(hash) });
    assert.deepEqual(JSON.parse(r.body), { data: { echo: { payload: 'héllo' } } });
    r = await get(srv.addr['graphql-get'], { variables: { p: 'x' }, extensions: ext(hash) });
    assertJsonResponse(r, 405, 'GET of a stored mutation');
    assert.equal(r.headers.allow, 'POST');
    r = await post(srv.addr['graphql-get'], { variables: { p: 'y' }, extensions: ext(hash) });
    assert.deepEqual(JSON.parse(r.body), { data: { echo: { payload: 'y' } } }, 'by POST the hash runs it');
    // a plain GET of a mutation too
    r = await get(srv.addr['graphql-get'], { query: m, variables: { p: 'x' } });
    assert.equal(r.status, 405);
    assert.equal(r.headers.allow, 'POST');
  });

  it('malformed parameters: 400 with a JSON error naming the parameter', async () => {
    const addr = srv.addr['graphql-get'];
    const hash = sha256('query { integer { value } }');
    const raw = (qs) => h1(addr, { path: `/graphql?${qs}` });
    const cases = [
      [raw('extensions=%7Bnot%20json'), /^the extensions parameter is not JSON .*expected a JSON object$/],
      [get(addr, { extensions: ext(hash, 2) }), /^extensions\.persistedQuery\.version is 2; only version 1 is supported$/],
      [get(addr, { extensions: { persistedQuery: { sha256Hash: hash } } }), /^extensions\.persistedQuery\.version is missing/],
      [get(addr, { extensions: ext('abc') }), /^extensions\.persistedQuery\.sha256Hash must be 64 hex digits .*"abc"$/],
      [get(addr, { extensions: ext(`${hash.slice(1)}g`) }), /sha256Hash must be 64 hex digits/],
      [get(addr, { extensions: ext(42) }), /sha256Hash must be 64 hex digits .*42$/],
      [get(addr, { extensions: [1] }), /^extensions must be a JSON object, got \[1\]$/],
      [get(addr, { extensions: { persistedQuery: 'x' } }), /^extensions\.persistedQuery must be a JSON object/],
      [get(addr, { variables: [1], extensions: ext(hash) }), /^variables must be a JSON object, got \[1\]$/],
      [raw(`variables=%7B&extensions=${encodeURIComponent(JSON.stringify(ext(hash)))}`), /^the variables parameter is not JSON/],
      [raw('extensions=%7B%7D&extensions=%7B%7D'), /^the extensions parameter is given 2 times, expected at most once$/],
      [get(addr, {}), /needs extensions\.persistedQuery\.sha256Hash \(a persisted query\) or a query$/],
      [get(addr, { operationName: 'X', extensions: {} }), /needs extensions\.persistedQuery\.sha256Hash/],
      [post(addr, { extensions: ext(hash, '1') }), /^extensions\.persistedQuery\.version is "1"/],
      [post(addr, { query: 7, extensions: ext(hash) }), /^query must be a string/],
      [post(addr, { variables: 'x', extensions: ext(hash) }), /^variables must be a JSON object/],
    ];
    for (const [pending, re] of cases) {
      const r = await pending;
      assertJsonResponse(r, 400, String(re));
      assert.match(errorMessage(r), re);
    }
  });

  it('a plain GET with query runs it; errors as on POST; other methods 405; oversized documents refused', async () => {
    const addr = srv.addr['graphql-get'];
    let r = await get(addr, { query: 'query I { integer { value } }', operationName: 'I' });
    assert.deepEqual(JSON.parse(r.body), { data: { integer: { value: 2147483647 } } });
    // a stored document that fails validation answers what POST answers
    const bad = 'query Bad { nope }';
    r = await get(addr, { query: bad, extensions: ext(sha256(bad)) });
    const fromPost = await post(srv.addr.graphql, { query: bad });
    assert.equal(r.status, 200);
    assert.ok(r.body.equals(fromPost.body), `${r.body} vs ${fromPost.body}`);
    assert.equal(JSON.parse(r.body).data, null);
    r = await get(addr, { extensions: ext(sha256(bad)) });
    assert.ok(r.body.equals(fromPost.body), 'stored, and answers as POST');
    // one that does not parse is not stored
    const broken = 'query {';
    r = await get(addr, { query: broken, extensions: ext(sha256(broken)) });
    assert.match(JSON.parse(r.body).errors[0].message, /^Syntax Error/);
    r = await get(addr, { extensions: ext(sha256(broken)) });
    assertBody(r, NOT_FOUND);
    for (const method of ['PUT', 'DELETE', 'HEAD', 'PATCH']) {
      r = await h1(addr, { method, path: `/graphql?extensions=${encodeURIComponent(JSON.stringify(ext(sha256(bad))))}` });
      assert.equal(r.status, 405, method);
      assert.equal(r.headers.allow, 'GET, POST', method);
    }
    // a document over the request-size limit: 413 by POST (fastify's body
    // limit), 431 by GET (Node's header limit); neither stored
    const big = `query Big { integer { value } } # ${'x'.repeat(MAX_BYTES)}`;
    r = await post(addr, { query: big, extensions: ext(sha256(big)) });
    assert.equal(r.status, 413);
    const long = `query Long { integer { value } } # ${'x'.repeat(20000)}`;
    r = await get(addr, { query: long, extensions: ext(sha256(long)) });
    assert.equal(r.status, 431);
    for (const doc of [big, long]) {
      r = await get(addr, { extensions: ext(sha256(doc)) });
      assertBody(r, NOT_FOUND);
    }
  });

  it('the store keeps at most 1,000 documents: the oldest registration is evicted', async () => {
    const addr = srv.addr['graphql-get'];
    const agent = keepAliveAgent();
    try {
      const doc = (i) => `query Q${i} { a${i}: integer { value } }`;
      const register = async (i) => {
        const r = await post(addr, { query: doc(i), extensions: ext(sha256(doc(i))) }, agent);
        assert.deepEqual(JSON.parse(r.body), { data: { [`a${i}`]: { value: 2147483647 } } }, `Q${i}`);
      };
      const known = async (i) => {
        const r = await get(addr, { extensions: ext(sha256(doc(i))) }, {}, agent);
        assert.equal(r.status, 200);
        return r.body.toString() !== NOT_FOUND;
      };
      // Q0 first, Q1..Q999 (four at a time), then Q0 used (no refresh: the
      // store evicts by registration order), then Q1000.
      await register(0);
      for (let i = 1; i < 1000; i += 4) await Promise.all([i, i + 1, i + 2, i + 3].filter((j) => j < 1000).map(register));
      assert.equal(await known(0), true, 'Q0 kept while 1,000 (with the documents above: more) are stored');
      await register(1000);
      assert.equal(await known(0), false, 'Q0, the oldest, evicted by the 1,001st');
      for (const i of [999, 1000]) assert.equal(await known(i), true, `Q${i} kept`);
      // in all, at most 1,000 of the 1,001 are still known
      let count = 0;
      for (let i = 0; i <= 1000; i += 4) {
        const found = await Promise.all([i, i + 1, i + 2, i + 3].filter((j) => j <= 1000).map(known));
        count += found.filter(Boolean).length;
      }
      assert.equal(count, 1000, 'of the 1,001, exactly 1,000 are known');
    } finally {
      agent.destroy();
    }
  });
});

describe(`graphql-get with two cluster workers (${mode})`, () => {
  it('a registration answered on one connection is known on every new connection (every worker)', async () => {
    const srv = await startServer({
      PROTOBENCH_REST_ADDR: '', PROTOBENCH_REST_H2_ADDR: '', PROTOBENCH_GRPC_ADDR: '', PROTOBENCH_SOAP_ADDR: '',
      PROTOBENCH_GRAPHQL_GET_ADDR: '127.0.0.1:0', PROTOBENCH_WORKERS: '2',
    });
    try {
      const addr = srv.addr['graphql-get'];
      for (let k = 0; k < 3; k++) {
        const q = `query C${k} { c${k}: integer { value } }`;
        const e = ext(sha256(q));
        // unknown on every worker first (fresh connections: both workers)
        for (let n = 0; n < 4; n++) assertBody(await get(addr, { extensions: e }), NOT_FOUND, `GET ${n} before registration ${k}`);
        const r = await post(addr, { query: q, extensions: e });
        assert.deepEqual(JSON.parse(r.body), { data: { [`c${k}`]: { value: 2147483647 } } });
        // node:cluster hands connections to the workers in turn
        for (let n = 0; n < 8; n++) {
          const g = await get(addr, { extensions: e });
          assert.deepEqual(JSON.parse(g.body), { data: { [`c${k}`]: { value: 2147483647 } } }, `GET ${n} after registration ${k}`);
        }
      }
    } finally {
      const r = await srv.stop();
      assert.equal(r.code, 0, srv.stderr());
    }
  });
});

describe(`graphql-get: service time and injected failures as on graphql (${mode})`, () => {
  it('a persisted query by GET waits the service time and fails as POST does', async () => {
    const srv = await startServer({
      PROTOBENCH_REST_ADDR: '', PROTOBENCH_REST_H2_ADDR: '', PROTOBENCH_GRPC_ADDR: '', PROTOBENCH_SOAP_ADDR: '',
      PROTOBENCH_GRAPHQL_ADDR: '127.0.0.1:0', PROTOBENCH_GRAPHQL_GET_ADDR: '127.0.0.1:0',
      PROTOBENCH_FAILURE_RATE: '1', PROTOBENCH_SERVICE_TIME: 'sleep:50ms',
    });
    try {
      const q = 'query F { integer { value } }';
      const e = ext(sha256(q));
      const reg = await post(srv.addr['graphql-get'], { query: q, extensions: e });
      const failed = JSON.parse(reg.body);
      assert.equal(failed.errors[0].extensions.code, 'INJECTED_FAILURE', clip(reg.body));
      const started = process.hrtime.bigint();
      const r = await get(srv.addr['graphql-get'], { extensions: e });
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      assert.ok(ms >= 49, `answered after ${ms} ms, before the 50 ms service time`);
      assertJsonResponse(r, 200, 'injected failure');
      const fromPost = await post(srv.addr.graphql, { query: q });
      assert.ok(r.body.equals(fromPost.body), `${clip(r.body)} vs ${clip(fromPost.body)}`);
    } finally {
      const r = await srv.stop();
      assert.equal(r.code, 0, srv.stderr());
    }
  });
});
