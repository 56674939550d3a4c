// Black-box checks of the server against contract/vectors and the contract's
// error rules, over REST (HTTP/1.1), REST over HTTP/2, gRPC and SOAP, in clear
// text or (PB_TEST_TLS_CERT/KEY set) TLS. Run by test.sh with `node --test`.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import http2 from 'node:http2';
import path from 'node:path';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';
import {
  TLS, startServer, h1, h2, grpcClient, grpcRaw, assertJsonEqual, decodePb, decodeSoap, soapFault,
  soapEnvelope, vector, vectorsDir, workloads, model, splitmixFailures, contractDir, serverDir, PB_NS,
} from './lib.js';

const mode = TLS ? 'tls' : 'clear';
const byName = new Map(workloads.map((w) => [w.name, w]));
const vectorDirs = fs.readdirSync(vectorsDir).filter((d) => fs.statSync(path.join(vectorsDir, d)).isDirectory()).sort();
const bench = model.root.lookupService('protobench.v1.Bench');
const greeter = model.root.lookupService('helloworld.Greeter');

function methodOf(op) {
  const m = bench.methods[op] ?? greeter.methods[op];
  assert.ok(m, `operation ${op} in the .proto files`);
  const full = (t) => t.fullName.replace(/^\./, '');
  m.resolve();
  return { request: full(m.resolvedRequestType), response: full(m.resolvedResponseType) };
}

const json = (r) => JSON.parse(r.body.toString('utf8'));
const restClients = { rest: h1, 'rest-h2': h2 };
const JSON_CT = { 'content-type': 'application/json' };
const XML_CT = { 'content-type': 'text/xml; charset=utf-8' };

function assertJsonError(r, status) {
  assert.equal(r.status, status, `status (body: ${r.body.toString().slice(0, 200)})`);
  assert.match(String(r.headers['content-type']), /^application\/json/);
  const b = json(r);
  assert.equal(b.code, status);
  assert.equal(typeof b.message, 'string');
  assert.ok(!/\n\s+at /.test(b.message), 'no stack trace');
  return b;
}

function assertFault(r, code) {
  assert.equal(r.status, 500, `status (body: ${r.body.toString().slice(0, 300)})`);
  assert.match(String(r.headers['content-type']), /^text\/xml/);
  const f = soapFault(r.body.toString('utf8'));
  assert.equal(f.code, code);
  assert.ok(!/\n\s+at /.test(f.string), 'no stack trace');
  return f;
}

const soapPost = (addr, xml, headers = {}) => h1(addr, { method: 'POST', path: '/soap', headers: { ...XML_CT, ...headers }, body: xml });

describe(`protobench node server (${mode})`, () => {
  let srv;
  let client;
  before(async () => {
    srv = await startServer();
    client = grpcClient(srv.addr.grpc);
  });
  after(async () => {
    client?.close();
    if (srv) {
      const r = await srv.stop('SIGTERM');
      assert.equal(r.code, 0, `exit code after SIGTERM (stderr: ${srv.stderr()})`);
    }
  });

  it('prints exactly one listening line per protocol and nothing else', () => {
    assert.equal(srv.lines.length, 4);
    for (const p of ['rest', 'rest-h2', 'grpc', 'soap']) {
      assert.equal(srv.lines.filter((l) => l.startsWith(`listening protocol=${p} `)).length, 1);
      assert.ok(srv.lines.some((l) => l === `listening protocol=${p} addr=${srv.addr[p]} tls=${!!TLS}`));
    }
  });

  describe('vectors', () => {
    assert.ok(vectorDirs.length >= 25, 'vectors present');
    for (const name of vectorDirs) {
      const w = byName.get(name);
      it(`${name}: listed in workloads.json`, () => assert.ok(w));
      if (!w) continue;
      const types = methodOf(w.operation);
      const resInfo = model.get(types.response);

      for (const proto of ['rest', 'rest-h2']) {
        it(`${name} ${proto}`, async () => {
          const post = w.restMethod === 'POST';
          const r = await restClients[proto](srv.addr[proto], {
            method: w.restMethod,
            path: w.restPath,
            headers: post ? JSON_CT : {},
            body: post ? vector(name, 'request.json') : undefined,
          });
          assert.equal(r.status, 200, r.body.toString().slice(0, 300));
          assert.match(String(r.headers['content-type']), /^application\/json/);
          if (TLS) assert.equal(r.alpn, proto === 'rest' ? 'http/1.1' : 'h2');
          assertJsonEqual(json(r), JSON.parse(vector(name, 'response.json')));
        });
      }

      it(`${name} grpc`, async () => {
        const { err, body } = await grpcRaw(client, w.grpcPath, vector(name, 'request.pb'));
        assert.ifError(err);
        assert.deepStrictEqual(decodePb(types.response, body), decodePb(types.response, vector(name, 'response.pb')));
      });

      it(`${name} soap`, async () => {
        const r = await soapPost(srv.addr.soap, vector(name, 'request.xml'), { soapaction: `"${w.soapAction}"` });
        assert.equal(r.status, 200, r.body.toString().slice(0, 300));
        assert.match(String(r.headers['content-type']), /^text\/xml/);
        if (TLS) assert.equal(r.alpn, 'http/1.1');
        const el = `${w.operation}Response`;
        assert.deepStrictEqual(decodeSoap(r.body.toString('utf8'), el, resInfo), decodeSoap(vector(name, 'response.xml').toString('utf8'), el, resInfo));
      });
    }
  });

  for (const proto of ['rest', 'rest-h2']) {
    describe(`${proto} bad input`, () => {
      const call = (opts) => restClients[proto](srv.addr[proto], opts);
      it('malformed JSON -> 400', async () => {
        assertJsonError(await call({ method: 'POST', path: '/v1/echo', headers: JSON_CT, body: '{"payload": "x"' }), 400);
      });
      it('unknown member -> 400', async () => {
        assertJsonError(await call({ method: 'POST', path: '/v1/echo', headers: JSON_CT, body: '{"payload":"x","extra":1}' }), 400);
      });
      it('wrong types -> 400', async () => {
        assertJsonError(await call({ method: 'POST', path: '/v1/products/echo', headers: JSON_CT, body: '{"id":"seven"}' }), 400);
        assertJsonError(await call({ method: 'POST', path: '/v1/echo', headers: JSON_CT, body: '{"payload":5}' }), 400);
        assertJsonError(await call({ method: 'POST', path: '/v1/echo', headers: JSON_CT, body: '[1,2]' }), 400);
        assertJsonError(await call({ method: 'POST', path: '/v1/products/echo', headers: JSON_CT, body: '{"id":1.5}' }), 400);
        assertJsonError(await call({ method: 'POST', path: '/v1/products/echo', headers: JSON_CT, body: '{"id":4294967296}' }), 400);
      });
      it('float: beyond float32 -> 400, the largest float32 accepted', async () => {
        assertJsonError(await call({ method: 'POST', path: '/v1/greeter/hello', headers: JSON_CT, body: '{"request":{"f":3.4028236e38}}' }), 400);
        const r = await call({ method: 'POST', path: '/v1/greeter/hello', headers: JSON_CT, body: '{"request":{"f":3.4028235e38}}' });
        assert.equal(r.status, 200, r.body.toString());
        assert.equal(JSON.parse(r.body.toString()).response.f, 3.4028235e38);
      });
      it('invalid values -> 400', async () => {
        assertJsonError(await call({ method: 'POST', path: '/v1/tasks/clone', headers: JSON_CT, body: '{"text":"a","times":-1}' }), 400);
        assertJsonError(await call({ method: 'POST', path: '/v1/tasks/clone', headers: JSON_CT, body: '{"text":"a","times":100001}' }), 400);
        assertJsonError(await call({ method: 'POST', path: '/v1/tasks/clone', headers: JSON_CT, body: JSON.stringify({ text: 'x'.repeat(1024), times: 65537 }) }), 400);
      });
      it('empty POST body -> 400', async () => {
        assertJsonError(await call({ method: 'POST', path: '/v1/echo' }), 400);
        assertJsonError(await call({ method: 'POST', path: '/v1/echo', headers: JSON_CT, body: '' }), 400);
      });
      it('unknown path -> 404', async () => {
        assertJsonError(await call({ path: '/v1/nope' }), 404);
        assertJsonError(await call({ path: '/' }), 404);
        assertJsonError(await call({ method: 'POST', path: '/v1/nope', headers: JSON_CT, body: '{}' }), 404);
      });
      it('unknown file -> 404', async () => {
        assertJsonError(await call({ path: '/v1/tasks/files/file-1k' }), 404);
      });
      it('wrong method -> 405 with Allow', async () => {
        let r = await call({ path: '/v1/echo' });
        assertJsonError(r, 405);
        assert.match(String(r.headers.allow), /POST/);
        r = await call({ method: 'DELETE', path: '/v1/inventory/s' });
        assertJsonError(r, 405);
        assert.match(String(r.headers.allow), /GET/);
        r = await call({ method: 'PUT', path: '/v1/tasks/files/file-455k', headers: JSON_CT, body: '{}' });
        assertJsonError(r, 405);
      });
      it('non-JSON content type -> 415', async () => {
        assertJsonError(await call({ method: 'POST', path: '/v1/echo', headers: { 'content-type': 'text/plain' }, body: '{"payload":"x"}' }), 415);
        assertJsonError(await call({ method: 'POST', path: '/v1/echo', headers: { 'content-type': 'application/xml' }, body: '<x/>' }), 415);
      });
      it('JSON with charset, original proto names, null as unset', async () => {
        let r = await call({ method: 'POST', path: '/v1/echo', headers: { 'content-type': 'application/json; charset=utf-8' }, body: '{"payload":"x"}' });
        assert.equal(r.status, 200);
        assertJsonEqual(json(r), { payload: 'x' });
        r = await call({ method: 'POST', path: '/v1/products/echo', headers: JSON_CT, body: '{"id":"7","name":null,"tags":null}' });
        assert.equal(r.status, 200);
        assertJsonEqual(json(r), { id: 7, name: '', description: '', price: 0, stock: 0, tags: [] });
      });
      it('ModifyProduct reverses by Unicode scalar values', async () => {
        const r = await call({ method: 'POST', path: '/v1/products/modify', headers: JSON_CT, body: JSON.stringify({ id: 1, description: 'ab😀cé' }) });
        assert.equal(r.status, 200);
        assert.equal(json(r).description, 'éc😀ba');
      });
    });
  }

  describe('soap bad input', () => {
    it('malformed XML -> Client fault', async () => {
      assertFault(await soapPost(srv.addr.soap, '<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><EchoRequest xmlns="urn:protobench:v1"><payload>x</EchoRequest></soap:Body></soap:Envelope>'), 'Client');
      assertFault(await soapPost(srv.addr.soap, 'not xml at all'), 'Client');
      assertFault(await soapPost(srv.addr.soap, ''), 'Client');
    });
    it('DOCTYPE / XXE payloads -> Client fault, nothing expanded', async () => {
      const secret = path.join(serverDir, 'package.json');
      const payloads = [
        `<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x "XXE-EXPANDED">]>${soapEnvelope('<EchoRequest xmlns="urn:protobench:v1"><payload>&x;</payload></EchoRequest>').replace(/^<\?xml[^>]*>/, '')}`,
        `<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file://${secret}">]>${soapEnvelope('<EchoRequest xmlns="urn:protobench:v1"><payload>&x;</payload></EchoRequest>').replace(/^<\?xml[^>]*>/, '')}`,
        `<!-- c --><!doctype r [<!ENTITY a "XXE-EXPANDED"><!ENTITY b "&a;&a;&a;&a;">]>${soapEnvelope('<EchoRequest xmlns="urn:protobench:v1"><payload>&b;</payload></EchoRequest>').replace(/^<\?xml[^>]*>/, '')}`,
        `<!DOCTYPE r>${soapEnvelope('<EchoRequest xmlns="urn:protobench:v1"><payload>x</payload></EchoRequest>').replace(/^<\?xml[^>]*>/, '')}`,
        soapEnvelope('<!DOCTYPE r><EchoRequest xmlns="urn:protobench:v1"><payload>x</payload></EchoRequest>'),
      ];
      for (const p of payloads) {
        const r = await soapPost(srv.addr.soap, p);
        assertFault(r, 'Client');
        const text = r.body.toString();
        assert.ok(!text.includes('XXE-EXPANDED') && !text.includes('protobench-server-node'), 'entity not expanded');
      }
    });
    it('unknown body element -> Client fault', async () => {
      assertFault(await soapPost(srv.addr.soap, soapEnvelope('<NopeRequest xmlns="urn:protobench:v1"/>')), 'Client');
      assertFault(await soapPost(srv.addr.soap, soapEnvelope('<EchoResponse xmlns="urn:protobench:v1"><payload>x</payload></EchoResponse>')), 'Client');
      assertFault(await soapPost(srv.addr.soap, '<EchoRequest xmlns="urn:protobench:v1"><payload>x</payload></EchoRequest>'), 'Client');
    });
    it('invalid values and unknown elements -> Client fault', async () => {
      const env = (inner) => soapEnvelope(`<CloneTextRequest xmlns="urn:protobench:v1">${inner}</CloneTextRequest>`);
      assertFault(await soapPost(srv.addr.soap, env('<text>a</text><times>-1</times>')), 'Client');
      assertFault(await soapPost(srv.addr.soap, env('<text>a</text><times>abc</times>')), 'Client');
      assertFault(await soapPost(srv.addr.soap, env('<text>a</text><times>1</times><extra>1</extra>')), 'Client');
      assertFault(await soapPost(srv.addr.soap, env('<text>a</text><times>1</times><times>2</times>')), 'Client');
    });
    it('unknown file -> Client fault', async () => {
      assertFault(await soapPost(srv.addr.soap, soapEnvelope('<GetFileRequest xmlns="urn:protobench:v1"><name>nope</name></GetFileRequest>')), 'Client');
    });
    it('dispatches on the body element, whatever the SOAPAction', async () => {
      const xml = soapEnvelope('<EchoRequest xmlns="urn:protobench:v1"><payload>  spaced &amp; &lt;![CDATA[x]]&gt;  </payload></EchoRequest>');
      for (const headers of [{}, { soapaction: '""' }, { soapaction: '"urn:protobench:v1#GetInventoryL"' }]) {
        const r = await soapPost(srv.addr.soap, xml, headers);
        assert.equal(r.status, 200);
        assert.deepStrictEqual(decodeSoap(r.body.toString(), 'EchoResponse', model.get('protobench.v1.EchoMessage')), { payload: '  spaced & <![CDATA[x]]>  ' });
      }
    });
    it('other content type -> 415, other path -> 404, other method -> 405', async () => {
      assert.equal((await h1(srv.addr.soap, { method: 'POST', path: '/soap', headers: JSON_CT, body: '{}' })).status, 415);
      assert.equal((await h1(srv.addr.soap, { method: 'POST', path: '/soap', headers: { 'content-type': 'application/soap+xml' }, body: '<x/>' })).status, 415);
      assert.equal((await h1(srv.addr.soap, { method: 'POST', path: '/other', headers: XML_CT, body: '<x/>' })).status, 404);
      assert.equal((await h1(srv.addr.soap, { path: '/' })).status, 404);
      assert.equal((await h1(srv.addr.soap, { method: 'PUT', path: '/soap', headers: XML_CT, body: '<x/>' })).status, 405);
      assert.equal((await h1(srv.addr.soap, { method: 'GET', path: '/soap' })).status, 405);
    });
    it('GET /soap?wsdl serves contract/wsdl/protobench.wsdl with its address set to the request host', async () => {
      const r = await h1(srv.addr.soap, { path: '/soap?wsdl', headers: { host: 'example.test:9999' } });
      assert.equal(r.status, 200);
      assert.match(String(r.headers['content-type']), /xml/);
      const contract = fs.readFileSync(path.join(contractDir, 'wsdl', 'protobench.wsdl'), 'utf8');
      const expected = contract.replace(/<soap:address location="[^"]*"/, `<soap:address location="${TLS ? 'https' : 'http'}://example.test:9999/soap"`);
      assert.notEqual(expected, contract);
      assert.equal(r.body.toString(), expected);
    });
  });

  describe('grpc bad input', () => {
    it('garbage -> INVALID_ARGUMENT', async () => {
      const cases = [
        ['/protobench.v1.Bench/Echo', [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]], // bad varint
        ['/protobench.v1.Bench/Echo', [0x0a, 0x10, 0x61, 0x62]], // string longer than the message
        ['/protobench.v1.Bench/Echo', [0x07]], // wire type 7
        ['/protobench.v1.Bench/Echo', [0x0a, 0x02, 0xff, 0xfe]], // invalid UTF-8 in a string
        ['/protobench.v1.Bench/Echo', [0x08, 0x01]], // known field, wrong wire type
        ['/protobench.v1.Bench/CloneText', [0x10]], // truncated varint
        ['/helloworld.Greeter/SayHello', [0x0a, 0x04, 0x0a, 0x10, 0x61, 0x62]], // nested string past its message
        ['/protobench.v1.Bench/Echo', [...Buffer.from('this is not a protobuf message')]],
      ];
      for (const [method, bytes] of cases) {
        const { err } = await grpcRaw(client, method, Buffer.from(bytes));
        assert.equal(err?.code, grpc.status.INVALID_ARGUMENT, `${method} ${bytes}: got ${err?.code} ${err?.details}`);
      }
    });
    it('unknown method -> UNIMPLEMENTED', async () => {
      for (const p of ['/protobench.v1.Bench/Nope', '/nope.Service/Echo']) {
        const { err } = await grpcRaw(client, p, Buffer.alloc(0));
        assert.equal(err?.code, grpc.status.UNIMPLEMENTED);
      }
    });
    it('unknown file -> NOT_FOUND; invalid times -> INVALID_ARGUMENT', async () => {
      const fileReq = model.root.lookupType('protobench.v1.FileRequest');
      let r = await grpcRaw(client, '/protobench.v1.Bench/GetFile', Buffer.from(fileReq.encode({ name: 'nope' }).finish()));
      assert.equal(r.err?.code, grpc.status.NOT_FOUND);
      const clone = model.root.lookupType('protobench.v1.CloneRequest');
      r = await grpcRaw(client, '/protobench.v1.Bench/CloneText', Buffer.from(clone.encode({ text: 'a', times: -1 }).finish()));
      assert.equal(r.err?.code, grpc.status.INVALID_ARGUMENT);
    });
    it('server reflection lists the services', async () => {
      const reflProto = path.join(serverDir, 'node_modules', '@grpc', 'reflection', 'build', 'proto', 'grpc', 'reflection', 'v1', 'reflection.proto');
      const def = grpc.loadPackageDefinition(protoLoader.loadSync(reflProto, { keepCase: true }));
      const creds = TLS ? grpc.credentials.createSsl(TLS.ca) : grpc.credentials.createInsecure();
      const rc = new def.grpc.reflection.v1.ServerReflection(srv.addr.grpc, creds, TLS ? { 'grpc.ssl_target_name_override': 'localhost', 'grpc.default_authority': 'localhost' } : {});
      const names = await new Promise((resolve, reject) => {
        const call = rc.ServerReflectionInfo();
        call.on('data', (m) => { resolve(m.list_services_response.service.map((s) => s.name)); call.end(); });
        call.on('error', reject);
        call.write({ list_services: '' });
      });
      rc.close();
      assert.ok(names.includes('protobench.v1.Bench') && names.includes('helloworld.Greeter'), names.join(','));
    });
  });
});

describe(`request size limit (${mode})`, () => {
  let srv;
  let client;
  before(async () => { srv = await startServer({ PROTOBENCH_MAX_REQUEST_BYTES: '1000' }); client = grpcClient(srv.addr.grpc); });
  after(async () => { client?.close(); if (srv) assert.equal((await srv.stop()).code, 0); });
  const big = JSON.stringify({ payload: 'x'.repeat(2000) });
  it('rest: oversized body -> 413, under the limit -> 200', async () => {
    assertJsonError(await h1(srv.addr.rest, { method: 'POST', path: '/v1/echo', headers: JSON_CT, body: big }), 413);
    assert.equal((await h1(srv.addr.rest, { method: 'POST', path: '/v1/echo', headers: JSON_CT, body: JSON.stringify({ payload: 'x'.repeat(900) }) })).status, 200);
  });
  it('rest-h2: oversized body -> 413', async () => {
    assertJsonError(await h2(srv.addr['rest-h2'], { method: 'POST', path: '/v1/echo', headers: JSON_CT, body: big }), 413);
  });
  it('soap: oversized body -> 413', async () => {
    const r = await soapPost(srv.addr.soap, soapEnvelope(`<EchoRequest xmlns="${PB_NS}"><payload>${'x'.repeat(2000)}</payload></EchoRequest>`));
    assert.equal(r.status, 413);
  });
  it('grpc: oversized message -> RESOURCE_EXHAUSTED, 1000 bytes -> OK', async () => {
    const echo = model.root.lookupType('protobench.v1.EchoMessage');
    let r = await grpcRaw(client, '/protobench.v1.Bench/Echo', Buffer.from(echo.encode({ payload: 'x'.repeat(2000) }).finish()));
    assert.equal(r.err?.code, grpc.status.RESOURCE_EXHAUSTED);
    const ok = Buffer.from(echo.encode({ payload: 'x'.repeat(997) }).finish());
    assert.equal(ok.length, 1000);
    r = await grpcRaw(client, '/protobench.v1.Bench/Echo', ok);
    assert.ifError(r.err);
  });
});

describe(`failure injection (${mode})`, () => {
  const SEED = 12345;
  const RATE = 0.2;
  it('single process: exact splitmix64 counts on every protocol, shared counter', async () => {
    const srv = await startServer({ PROTOBENCH_FAILURE_RATE: String(RATE), PROTOBENCH_FAILURE_SEED: String(SEED) });
    const client = grpcClient(srv.addr.grpc);
    try {
      // An invalid request does not reach an operation: no draw.
      assertJsonError(await h1(srv.addr.rest, { method: 'POST', path: '/v1/tasks/clone', headers: JSON_CT, body: '{"times":-5}' }), 400);
      let fails = 0;
      for (let i = 0; i < 1000; i++) {
        const r = await h1(srv.addr.rest, { path: '/v1/tasks/integer' });
        if (r.status === 500) {
          const b = assertJsonError(r, 500);
          assert.equal(b.message, 'injected failure');
          fails++;
        } else assert.equal(r.status, 200);
      }
      const expected1000 = splitmixFailures(SEED, RATE, 1000);
      assert.equal(fails, expected1000);
      assert.ok(Math.abs(fails - 200) <= 40);
      let gfails = 0;
      for (let i = 0; i < 300; i++) {
        const { err } = await grpcRaw(client, '/protobench.v1.Bench/GetInteger', Buffer.alloc(0));
        if (err) {
          assert.equal(err.code, grpc.status.UNAVAILABLE);
          assert.equal(err.details, 'injected failure');
          gfails++;
        }
      }
      assert.equal(gfails, splitmixFailures(SEED, RATE, 1300) - expected1000);
      let sfails = 0;
      for (let i = 0; i < 100; i++) {
        const r = await soapPost(srv.addr.soap, soapEnvelope(`<GetIntegerRequest xmlns="${PB_NS}"/>`));
        if (r.status === 500) {
          const f = assertFault(r, 'Server');
          assert.equal(f.string, 'injected failure');
          sfails++;
        } else assert.equal(r.status, 200);
      }
      assert.equal(sfails, splitmixFailures(SEED, RATE, 1400) - splitmixFailures(SEED, RATE, 1300));
    } finally {
      client.close();
      assert.equal((await srv.stop()).code, 0);
    }
  });
  it('two cluster workers: 200 +- 40 failures over 1000 calls; SIGTERM exits 0', async () => {
    const srv = await startServer({ PROTOBENCH_WORKERS: '2', PROTOBENCH_FAILURE_RATE: String(RATE), PROTOBENCH_FAILURE_SEED: String(SEED) });
    try {
      let fails = 0;
      for (let i = 0; i < 1000; i++) {
        const r = await h1(srv.addr.rest, { path: '/v1/tasks/integer' });
        if (r.status === 500) fails++; else assert.equal(r.status, 200);
      }
      assert.ok(Math.abs(fails - 200) <= 40, `failures: ${fails}`);
      // every protocol is served by the workers
      const client = grpcClient(srv.addr.grpc);
      const g = await grpcRaw(client, '/protobench.v1.Bench/GetInventoryXs', Buffer.alloc(0));
      client.close();
      assert.ok(!g.err || g.err.code === grpc.status.UNAVAILABLE);
      const h = await h2(srv.addr['rest-h2'], { path: '/v1/inventory/xs' });
      assert.ok(h.status === 200 || h.status === 500);
    } finally {
      const r = await srv.stop();
      assert.equal(r.code, 0, `exit code (stderr: ${srv.stderr()})`);
    }
  });
});

describe(`service time (${mode})`, () => {
  it('sleep:50ms delays every protocol by >= 50 ms without blocking other requests', async () => {
    const srv = await startServer({ PROTOBENCH_SERVICE_TIME: 'sleep:50ms' });
    const client = grpcClient(srv.addr.grpc);
    try {
      const timed = async (fn) => { const t = process.hrtime.bigint(); await fn(); return Number(process.hrtime.bigint() - t) / 1e6; };
      assert.ok(await timed(() => h1(srv.addr.rest, { path: '/v1/tasks/integer' })) >= 50);
      assert.ok(await timed(() => h2(srv.addr['rest-h2'], { path: '/v1/tasks/integer' })) >= 50);
      assert.ok(await timed(() => grpcRaw(client, '/protobench.v1.Bench/GetInteger', Buffer.alloc(0))) >= 50);
      assert.ok(await timed(() => soapPost(srv.addr.soap, soapEnvelope(`<GetIntegerRequest xmlns="${PB_NS}"/>`))) >= 50);
      // 8 concurrent sleeps overlap (the sleep is asynchronous)
      const all = await timed(() => Promise.all(Array.from({ length: 8 }, () => grpcRaw(client, '/protobench.v1.Bench/GetInteger', Buffer.alloc(0)))));
      assert.ok(all >= 50 && all < 350, `8 concurrent calls took ${all} ms`);
    } finally {
      client.close();
      assert.equal((await srv.stop()).code, 0);
    }
  });
  it('spin:30ms delays a call by >= 30 ms', async () => {
    const srv = await startServer({ PROTOBENCH_SERVICE_TIME: 'spin:30ms' });
    try {
      const t = process.hrtime.bigint();
      const r = await h1(srv.addr.rest, { path: '/v1/tasks/integer' });
      assert.equal(r.status, 200);
      assert.ok(Number(process.hrtime.bigint() - t) / 1e6 >= 30);
    } finally {
      assert.equal((await srv.stop()).code, 0);
    }
  });
});

describe(`shutdown (${mode})`, () => {
  it('SIGTERM finishes the requests in flight on every protocol, closes idle connections, exits 0', async () => {
    const srv = await startServer({ PROTOBENCH_SERVICE_TIME: 'sleep:400ms' });
    const client = grpcClient(srv.addr.grpc);
    const agent = new (TLS ? https : http).Agent({ keepAlive: true });
    // an idle keep-alive connection and an idle HTTP/2 session must not hold up the exit
    const session = http2.connect(`${TLS ? 'https' : 'http'}://${srv.addr['rest-h2']}`, TLS ? { ca: TLS.ca, servername: 'localhost' } : {});
    session.on('error', () => {});
    try {
      await h1(srv.addr.soap, { path: '/soap?wsdl', agent });
      const pending = [
        h1(srv.addr.rest, { path: '/v1/tasks/integer', agent }),
        h2(srv.addr['rest-h2'], { path: '/v1/tasks/integer' }),
        grpcRaw(client, '/protobench.v1.Bench/GetInteger', Buffer.alloc(0)),
        soapPost(srv.addr.soap, soapEnvelope(`<GetIntegerRequest xmlns="${PB_NS}"/>`)),
      ];
      await new Promise((r) => setTimeout(r, 150));
      const t = Date.now();
      const stopped = srv.stop('SIGTERM');
      const [r1, r2, g, s] = await Promise.all(pending);
      assert.equal(r1.status, 200);
      assert.equal(r2.status, 200);
      assert.ifError(g.err);
      assert.equal(s.status, 200);
      assert.equal((await stopped).code, 0);
      assert.ok(Date.now() - t < 5000, `exit took ${Date.now() - t} ms ${srv.stderr()}`);
    } finally {
      client.close();
      session.destroy();
      agent.destroy();
    }
  });
  it('SIGINT exits 0', async () => {
    const srv = await startServer();
    assert.equal((await srv.stop('SIGINT')).code, 0);
  });
});
