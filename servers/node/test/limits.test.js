// The server limits of contract/README.md (issue 14, items 4-7), against the
// real server on 127.0.0.1:0 with short timeouts, in clear text or (with
// PB_TEST_TLS_CERT/KEY) TLS:
//   - bad PROTOBENCH_IDLE_TIMEOUT / _READ_TIMEOUT / _MAX_STREAMS stop the
//     server, naming the variable;
//   - idle timeout: connections that send nothing, only the HTTP/2 preface,
//     or nothing after a request, are closed after it and not before;
//   - read timeout: slow headers / bodies abandoned, 408;
//   - SETTINGS_MAX_CONCURRENT_STREAMS on rest-h2 and grpc;
//   - descriptor exhaustion: existing connections served, no spinning,
//     recovery (prlimit);
//   - SOAP: more than 10,000 elements refused before parsing, memory of an
//     8 MB request of <a/>;
//   - gRPC: 415 without a gRPC content type, a second message on a unary
//     call is not answered with OK;
//   - error texts name the input's problem, not our code or node-soap's.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import http2 from 'node:http2';
import net from 'node:net';
import tls from 'node:tls';
import {
  TLS, startServer, h1, soapEnvelope, soapFault, grpcClient, grpcRaw, serverDir,
} from './lib.js';
import { hasMoreElements } from '../src/soap.js';

const mode = TLS ? 'tls' : 'clear';
const PREFACE = 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n';
const IDLE_MS = 2000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function hostPort(addr) {
  const [host, port] = addr.split(':');
  return { host, port: Number(port) };
}

// A TCP connection (never TLS: a TLS listener sees a handshake that never
// starts).
function rawConnect(addr) {
  return new Promise((resolve, reject) => {
    const s = net.connect(hostPort(addr), () => resolve(s));
    s.on('error', reject);
  });
}

// A connection speaking the listener's protocol: TCP, or TLS with `alpn`.
function connect(addr, alpn) {
  if (!TLS) return rawConnect(addr);
  return new Promise((resolve, reject) => {
    const s = tls.connect({ ...hostPort(addr), ca: TLS.ca, servername: 'localhost', ALPNProtocols: [alpn] }, () => resolve(s));
    s.on('error', reject);
  });
}

// Resolves to how long (ms) the server took to close `socket` after
// `start`; rejects if it is still open after maxMs.
function closedWithin(socket, start, maxMs) {
  return new Promise((resolve, reject) => {
    socket.on('error', () => {});
    socket.resume(); // read and discard whatever comes
    const timer = setTimeout(() => { socket.destroy(); reject(new Error(`still open after ${maxMs} ms`)); }, maxMs - (Date.now() - start));
    socket.on('close', () => { clearTimeout(timer); resolve(Date.now() - start); });
  });
}

async function assertClosedAfterIdle(socket, start, what, slackMs = 3000) {
  const took = await closedWithin(socket, start, IDLE_MS + slackMs);
  assert.ok(took >= IDLE_MS - 300, `${what}: closed after ${took} ms, before the idle timeout`);
}

function startCmdSync(env) {
  return spawnSync(process.execPath, ['src/server.js'], {
    cwd: serverDir,
    env: { ...process.env, PROTOBENCH_REST_ADDR: '127.0.0.1:0', PROTOBENCH_WORKERS: '1', ...env },
    timeout: 20000,
    encoding: 'utf8',
  });
}

describe(`limit variables (${mode})`, () => {
  for (const [name, value] of [
    ['PROTOBENCH_IDLE_TIMEOUT', 'abc'], ['PROTOBENCH_IDLE_TIMEOUT', '5'], ['PROTOBENCH_IDLE_TIMEOUT', '0s'],
    ['PROTOBENCH_IDLE_TIMEOUT', '1.5s'], ['PROTOBENCH_READ_TIMEOUT', '10m'], ['PROTOBENCH_READ_TIMEOUT', '-1s'],
    ['PROTOBENCH_MAX_STREAMS', '0'], ['PROTOBENCH_MAX_STREAMS', 'x'], ['PROTOBENCH_MAX_STREAMS', '4294967296'],
  ]) {
    it(`refuses ${name}=${value}, naming the variable`, () => {
      const r = startCmdSync({ [name]: value });
      assert.equal(r.status, 1, `exit status (signal ${r.signal}); stderr: ${r.stderr}`);
      assert.match(r.stderr, new RegExp(name));
    });
  }
});

describe(`idle timeout (${mode})`, () => {
  let srv;
  before(async () => { srv = await startServer({ PROTOBENCH_IDLE_TIMEOUT: '2s', PROTOBENCH_READ_TIMEOUT: '10s' }); });
  after(async () => { await srv?.stop(); });

  it('closes a connection that sends nothing (TLS: never starts its handshake), on every protocol', async () => {
    await Promise.all(['rest', 'rest-h2', 'grpc', 'soap'].map(async (p) => {
      const start = Date.now();
      await assertClosedAfterIdle(await rawConnect(srv.addr[p]), start, p);
    }));
  });

  it('closes an HTTP/2 connection that sent only the client preface (rest-h2, grpc)', async () => {
    await Promise.all(['rest-h2', 'grpc'].map(async (p) => {
      const s = await connect(srv.addr[p], 'h2');
      const start = Date.now();
      s.write(PREFACE);
      await assertClosedAfterIdle(s, start, p);
    }));
  });

  it('closes an HTTP/2 session idle after its last stream (rest-h2, grpc)', async () => {
    await Promise.all(['rest-h2', 'grpc'].map(async (p) => {
      const session = http2.connect(`${TLS ? 'https' : 'http'}://${srv.addr[p]}`, TLS ? { ca: TLS.ca, servername: 'localhost' } : {});
      session.on('error', () => {});
      const headers = p === 'grpc'
        ? { ':method': 'POST', ':path': '/protobench.v1.Bench/GetInteger', 'content-type': 'application/grpc', te: 'trailers' }
        : { ':method': 'GET', ':path': '/v1/tasks/integer' };
      const req = session.request(headers);
      req.resume();
      req.end(p === 'grpc' ? Buffer.alloc(5) : undefined);
      await new Promise((resolve, reject) => { req.on('close', resolve); req.on('error', reject); });
      const start = Date.now();
      const took = await new Promise((resolve, reject) => {
        const timer = setTimeout(() => { session.destroy(); reject(new Error(`${p}: session still open`)); }, IDLE_MS + 3000);
        session.on('close', () => { clearTimeout(timer); resolve(Date.now() - start); });
      });
      assert.ok(took >= IDLE_MS - 300, `${p}: closed after ${took} ms`);
    }));
  });

  it('closes an HTTP/1.1 keep-alive connection idle after a request (rest, soap)', async () => {
    await Promise.all([['rest', '/v1/tasks/integer'], ['soap', '/soap?wsdl']].map(async ([p, path]) => {
      const s = await connect(srv.addr[p], 'http/1.1');
      s.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
      // the response ends with the body; wait for its first bytes
      await new Promise((resolve) => s.once('data', resolve));
      const start = Date.now();
      await assertClosedAfterIdle(s, start, p);
    }));
  });

  if (TLS) {
    it('closes a TLS connection that finished its handshake and sends nothing (rest-h2, grpc)', async () => {
      await Promise.all(['rest-h2', 'grpc'].map(async (p) => {
        const start = Date.now();
        await assertClosedAfterIdle(await connect(srv.addr[p], 'h2'), start, p);
      }));
    });
  }
});

describe(`read timeout (${mode})`, () => {
  let srv;
  before(async () => { srv = await startServer({ PROTOBENCH_IDLE_TIMEOUT: '20s', PROTOBENCH_READ_TIMEOUT: '2s' }); });
  after(async () => { await srv?.stop(); });

  for (const [p, path, ctype, check] of [
    ['rest', '/v1/echo', 'application/json', (body) => assert.deepEqual(JSON.parse(body), { code: 408, message: 'request not received within the read timeout' })],
    ['soap', '/soap', 'text/xml; charset=utf-8', (body) => assert.match(body, /read timeout/)],
  ]) {
    it(`${p}: a body that never completes gets 408 and the connection is closed`, async () => {
      const s = await connect(srv.addr[p], 'http/1.1');
      const start = Date.now();
      s.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: ${ctype}\r\nContent-Length: 100\r\n\r\n{"pay`);
      let data = '';
      s.on('data', (d) => { data += d; });
      const took = await closedWithin(s, start, 5000);
      assert.ok(took >= 1700, `closed after ${took} ms`);
      assert.match(data, /^HTTP\/1\.1 408 /);
      check(data.slice(data.indexOf('\r\n\r\n') + 4));
    });

    it(`${p}: headers that never complete: the connection is closed`, async () => {
      const s = await connect(srv.addr[p], 'http/1.1');
      const start = Date.now();
      s.write('GET / HTTP/1.1\r\nHost: x\r\n');
      const took = await closedWithin(s, start, 5000);
      assert.ok(took >= 1700, `closed after ${took} ms`);
    });
  }
});

describe(`max streams (${mode})`, () => {
  for (const [env, want] of [[{}, 1000], [{ PROTOBENCH_MAX_STREAMS: '7' }, 7]]) {
    it(`advertises SETTINGS_MAX_CONCURRENT_STREAMS = ${want} on rest-h2 and grpc`, async () => {
      const srv = await startServer(env);
      try {
        for (const p of ['rest-h2', 'grpc']) {
          const session = http2.connect(`${TLS ? 'https' : 'http'}://${srv.addr[p]}`, TLS ? { ca: TLS.ca, servername: 'localhost' } : {});
          session.on('error', () => {});
          const settings = await new Promise((resolve, reject) => {
            const timer = setTimeout(() => reject(new Error('no SETTINGS')), 5000);
            session.once('remoteSettings', (s) => { clearTimeout(timer); resolve(s); });
          });
          session.destroy();
          assert.equal(settings.maxConcurrentStreams, want, p);
        }
      } finally {
        await srv.stop();
      }
    });
  }
});

function cpuSeconds(pid) {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime + stime, 100 ticks/s
}

const openFds = (pid) => fs.readdirSync(`/proc/${pid}/fd`).length;

describe(`descriptor exhaustion (${mode})`, () => {
  const havePrlimit = spawnSync('prlimit', ['--version']).status === 0;
  it('keeps serving open connections at the descriptor limit, without spinning, and recovers', { skip: !havePrlimit && 'prlimit not found' }, async () => {
    const LIMIT = 64;
    const srv = await startServer({ PROTOBENCH_IDLE_TIMEOUT: '60s' }, { wrap: ['prlimit', `--nofile=${LIMIT}:${LIMIT}`] });
    const pid = srv.child.pid;
    const flood = [];
    const agent = new (TLS ? https : http).Agent({ keepAlive: true, maxSockets: 1 });
    const client = grpcClient(srv.addr.grpc);
    try {
      const get = () => h1(srv.addr.rest, { path: '/v1/tasks/integer', agent });
      assert.equal((await get()).status, 200);
      const call = () => grpcRaw(client, '/protobench.v1.Bench/GetInteger', Buffer.alloc(0));
      assert.equal((await call()).err, null);

      // More connections than the server has descriptors.
      for (let i = 0; i < 2 * LIMIT; i++) {
        const s = await rawConnect(srv.addr.rest).catch(() => null);
        if (!s) break;
        s.on('error', () => {});
        flood.push(s);
      }
      const deadline = Date.now() + 5000;
      while (openFds(pid) < LIMIT && Date.now() < deadline) await sleep(50);
      assert.ok(openFds(pid) >= LIMIT, `server holds ${openFds(pid)} descriptors, never reached ${LIMIT}`);
      // Keep knocking while measuring: new connections keep arriving.
      for (let i = 0; i < 20; i++) flood.push(await rawConnect(srv.addr.rest).then((s) => { s.on('error', () => {}); return s; }, () => null));
      const cpu0 = cpuSeconds(pid);
      const t0 = Date.now();
      await sleep(1000);
      const used = cpuSeconds(pid) - cpu0;
      assert.ok(used < (Date.now() - t0) / 1000 / 4, `server used ${used} s of CPU in a second at the limit: spinning`);
      assert.equal((await get()).status, 200, 'existing HTTP/1.1 keep-alive connection at the limit');
      assert.equal((await call()).err, null, 'existing gRPC connection at the limit');
      assert.equal(srv.child.exitCode, null, `server exited: ${srv.stderr()}`);

      for (const s of flood) s?.destroy();
      flood.length = 0;
      await sleep(200);
      const fresh = await h1(srv.addr.rest, { path: '/v1/tasks/integer' });
      assert.equal(fresh.status, 200, 'new connection after the flood');
    } finally {
      for (const s of flood) s?.destroy();
      agent.destroy();
      client.close();
      await srv.stop();
    }
  });
});

function statusKb(pid, key) {
  const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m[1]);
}

describe(`SOAP element limit (${mode})`, () => {
  let srv;
  before(async () => { srv = await startServer(); });
  after(async () => { await srv?.stop(); });
  const TOO_MANY = 'too many XML elements: more than 10000';
  // Envelope, Header, Body, EchoRequest, payload = 5; <h/> in the Header
  // (ignored) make up the rest.
  const echo = (total) => `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Header>${'<h/>'.repeat(total - 5)}</soap:Header><soap:Body><EchoRequest xmlns="urn:protobench:v1"><payload>x</payload></EchoRequest></soap:Body></soap:Envelope>`;
  const post = (xml) => h1(srv.addr.soap, { method: 'POST', path: '/soap', headers: { 'content-type': 'text/xml; charset=utf-8' }, body: xml });

  it('answers 10,000 elements and refuses 10,001 with a soap:Client fault', async () => {
    const ok = await post(echo(10000));
    assert.equal(ok.status, 200, ok.body.toString().slice(0, 300));
    const r = await post(echo(10001));
    assert.equal(r.status, 500);
    assert.deepEqual(soapFault(r.body.toString()), { code: 'Client', string: TOO_MANY });
  });

  it('counts elements only: comments, CDATA, processing instructions and end tags are not elements', () => {
    assert.equal(hasMoreElements('<a><b/><!-- <c/><d/> --><![CDATA[<e/><f/>]]><?pi <g/>?></a>', 2), false);
    assert.equal(hasMoreElements('<a><b/><c/></a>', 2), true);
    assert.equal(hasMoreElements('<a><!-- never closed <b/><c/>', 1), false); // malformed: left to the parser
  });

  it('an 8 MB request of <a/> siblings grows RSS by less than 48 MB', async () => {
    const pid = srv.child.pid;
    const head = '<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><EchoRequest xmlns="urn:protobench:v1">';
    const tail = '</EchoRequest></soap:Body></soap:Envelope>';
    const body = head + '<a/>'.repeat(Math.floor((8 * 1024 * 1024 - head.length - tail.length) / 4)) + tail;
    const before = statusKb(pid, 'VmRSS');
    const r = await post(body);
    const growthMb = (statusKb(pid, 'VmHWM') - before) / 1024;
    assert.equal(r.status, 500);
    assert.equal(soapFault(r.body.toString()).string, TOO_MANY);
    console.log(`# 8 MB request of <a/>: RSS grew by ${growthMb.toFixed(1)} MiB`);
    assert.ok(growthMb < 48, `RSS grew by ${growthMb.toFixed(1)} MiB`);
  });
});

// One raw HTTP/2 request on the gRPC listener: {status, grpcStatus}.
function grpcH2(addr, headers, body) {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`${TLS ? 'https' : 'http'}://${addr}`, TLS ? { ca: TLS.ca, servername: 'localhost' } : {});
    session.on('error', reject);
    const req = session.request({ ':method': 'POST', ':path': '/protobench.v1.Bench/Echo', te: 'trailers', ...headers });
    let head;
    let trailers = {};
    req.on('response', (h) => { head = h; });
    req.on('trailers', (t) => { trailers = t; });
    req.resume();
    req.on('close', () => {
      session.close();
      resolve({ status: head?.[':status'], grpcStatus: trailers['grpc-status'] ?? head?.['grpc-status'] });
    });
    req.end(body);
  });
}

const frame = (msg) => Buffer.concat([Buffer.from([0, 0, 0, 0, msg.length]), msg]);

describe(`gRPC framing (${mode})`, () => {
  let srv;
  before(async () => { srv = await startServer(); });
  after(async () => { await srv?.stop(); });
  const echo = frame(Buffer.from([0x0a, 0x02, 0x68, 0x69])); // EchoMessage{payload: "hi"}

  it('415 for a missing or non-gRPC content-type, 200 for application/grpc(+proto)', async () => {
    for (const ct of [undefined, 'application/json', 'text/plain', 'application/grpx']) {
      const r = await grpcH2(srv.addr.grpc, ct ? { 'content-type': ct } : {}, echo);
      assert.equal(r.status, 415, `content-type ${ct}`);
    }
    for (const ct of ['application/grpc', 'application/grpc+proto']) {
      const r = await grpcH2(srv.addr.grpc, { 'content-type': ct }, echo);
      assert.deepEqual(r, { status: 200, grpcStatus: '0' }, ct);
    }
  });

  it('a unary call whose request stream carries a second message is not answered with OK', async () => {
    const r = await grpcH2(srv.addr.grpc, { 'content-type': 'application/grpc' }, Buffer.concat([echo, echo]));
    assert.ok(r.grpcStatus !== undefined && r.grpcStatus !== '0', `grpc-status ${r.grpcStatus}`);
  });
});

// Words that would show code rather than the input's problem.
const INTERNALS = [/\bError:/, /TypeError/, /is not a function/, /Cannot read propert/, /\bat \S+ \(/, /\.js\b/, /this\./, /undefined/];
const assertNoInternals = (text, what) => { for (const re of INTERNALS) assert.doesNotMatch(text, re, `${what}: ${text}`); };

describe(`error texts (${mode})`, () => {
  let srv;
  before(async () => { srv = await startServer(); });
  after(async () => { await srv?.stop(); });
  const post = (xml) => h1(srv.addr.soap, { method: 'POST', path: '/soap', headers: { 'content-type': 'text/xml; charset=utf-8' }, body: xml });

  it('SOAP faults name the XML problem, not sax or node-soap', async () => {
    for (const [xml, want] of [
      ['<a>', 'malformed XML: Unclosed root tag'],
      [soapEnvelope('<EchoRequest xmlns="urn:protobench:v1"><payload>&bogus;</payload></EchoRequest>'), 'malformed XML: Invalid character entity'],
      [soapEnvelope('<GetFileRequest xmlns="urn:protobench:v1"><constructor>1</constructor></GetFileRequest>'), null],
      [soapEnvelope('<__proto__ xmlns="urn:protobench:v1"/>'), null],
      [soapEnvelope('<EchoRequest xmlns="urn:protobench:v1"><__proto__>x</__proto__></EchoRequest>'), null],
    ]) {
      const r = await post(xml);
      assert.equal(r.status, 500, xml);
      const f = soapFault(r.body.toString());
      assert.equal(f.code, 'Client', xml);
      if (want) assert.equal(f.string, want);
      assertNoInternals(f.string, xml);
    }
  });

  it('SOAP: a body that is not valid UTF-8 is malformed XML, not echoed with U+FFFD', async () => {
    const xml = Buffer.concat([Buffer.from(soapEnvelope('<EchoRequest xmlns="urn:protobench:v1"><payload>').replace('</soap:Body></soap:Envelope>', '')),
      Buffer.from([0xff, 0xfe]), Buffer.from('</payload></EchoRequest></soap:Body></soap:Envelope>')]);
    const r = await post(xml);
    assert.equal(r.status, 500, r.body.toString());
    assert.deepEqual(soapFault(r.body.toString()), { code: 'Client', string: 'malformed XML: invalid UTF-8' });
  });

  it('malformed HTTP/1.1 gets a JSON 400 without the parser\'s error code', async () => {
    const s = await connect(srv.addr.rest, 'http/1.1');
    s.write('GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n');
    let data = '';
    s.on('data', (d) => { data += d; });
    await closedWithin(s, Date.now(), 5000);
    assert.match(data, /^HTTP\/1\.1 400 /);
    assert.deepEqual(JSON.parse(data.slice(data.indexOf('\r\n\r\n') + 4)), { code: 400, message: 'malformed HTTP request' });
  });

  it('gRPC: an undecodable message is INVALID_ARGUMENT naming the wire problem', async () => {
    const client = grpcClient(srv.addr.grpc);
    try {
      const r = await grpcRaw(client, '/protobench.v1.Bench/Echo', Buffer.from([0x0a, 0x05, 0x68]));
      assert.equal(r.err?.code, 3);
      assert.equal(r.err.details, 'undecodable protobench.v1.EchoMessage message: field runs past the end of the message');
      assertNoInternals(r.err.details, 'grpc');
    } finally {
      client.close();
    }
  });
});
