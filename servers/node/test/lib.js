// Test helpers: start/stop the server, HTTP/1.1, HTTP/2, gRPC and SOAP
// clients, and value comparison of JSON, protobuf and XML bodies.
import { spawn } from 'node:child_process';
import http from 'node:http';
import https from 'node:https';
import http2 from 'node:http2';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import grpc from '@grpc/grpc-js';
import sax from 'sax';
import { loadModel } from '../src/model.js';

const here = path.dirname(fileURLToPath(import.meta.url));
export const serverDir = path.resolve(here, '..');
export const contractDir = path.resolve(serverDir, '..', '..', 'contract');
export const vectorsDir = path.join(contractDir, 'vectors');
export const model = loadModel();
export const SOAP_ENV = 'http://schemas.xmlsoap.org/soap/envelope/';
export const PB_NS = 'urn:protobench:v1';

export const workloads = JSON.parse(fs.readFileSync(path.join(contractDir, 'workloads.json'), 'utf8'));

// ---------------------------------------------------------------- server

export const TLS = process.env.PB_TEST_TLS_CERT
  ? { cert: process.env.PB_TEST_TLS_CERT, key: process.env.PB_TEST_TLS_KEY, ca: fs.readFileSync(process.env.PB_TEST_TLS_CERT) }
  : null;

const ALL_ADDRS = {
  PROTOBENCH_REST_ADDR: '127.0.0.1:0',
  PROTOBENCH_REST_H2_ADDR: '127.0.0.1:0',
  PROTOBENCH_GRPC_ADDR: '127.0.0.1:0',
  PROTOBENCH_SOAP_ADDR: '127.0.0.1:0',
};

// Starts the server with all four protocols on port 0 (plus `env`), waits
// (bounded) for every listening line. Returns {addr: {rest, ...}, tls, stop}.
// `wrap` runs the server under a command that execs it (e.g. prlimit).
export async function startServer(env = {}, { timeoutMs = 40000, wrap = [] } = {}) {
  const fullEnv = { ...process.env, PROTOBENCH_WORKERS: '1', ...ALL_ADDRS, ...env };
  for (const k of Object.keys(fullEnv)) if (k.startsWith('PROTOBENCH_TLS_')) delete fullEnv[k];
  if (TLS) Object.assign(fullEnv, { PROTOBENCH_TLS_CERT: TLS.cert, PROTOBENCH_TLS_KEY: TLS.key });
  const expected = Object.entries({
    rest: 'PROTOBENCH_REST_ADDR', 'rest-h2': 'PROTOBENCH_REST_H2_ADDR', grpc: 'PROTOBENCH_GRPC_ADDR', soap: 'PROTOBENCH_SOAP_ADDR',
    graphql: 'PROTOBENCH_GRAPHQL_ADDR', 'graphql-get': 'PROTOBENCH_GRAPHQL_GET_ADDR', connect: 'PROTOBENCH_CONNECT_ADDR', 'connect-json': 'PROTOBENCH_CONNECT_JSON_ADDR', 'grpc-web': 'PROTOBENCH_GRPC_WEB_ADDR',
  })
    .filter(([, k]) => fullEnv[k]).map(([p]) => p);
  const argv = [...wrap, process.execPath, 'src/server.js'];
  const child = spawn(argv[0], argv.slice(1), { cwd: serverDir, env: fullEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const addr = {};
  const lines = [];
  let onEarlyExit;
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`server did not start in ${timeoutMs} ms; stderr: ${stderr}`)); }, timeoutMs);
    onEarlyExit = (code) => { clearTimeout(timer); reject(new Error(`server exited early (${code}); stderr: ${stderr}`)); };
    child.on('exit', onEarlyExit);
    child.stdout.on('data', (d) => {
      stdout += d;
      let nl;
      while ((nl = stdout.indexOf('\n')) >= 0) {
        const line = stdout.slice(0, nl);
        stdout = stdout.slice(nl + 1);
        lines.push(line);
        const m = /^listening protocol=(rest|rest-h2|grpc|soap|graphql|graphql-get|connect|connect-json|grpc-web) addr=(127\.0\.0\.1:\d+) tls=(true|false)$/.exec(line);
        if (!m) continue;
        addr[m[1]] = m[2];
        if (expected.every((p) => addr[p])) { clearTimeout(timer); resolve(); }
      }
    });
  });
  child.off('exit', onEarlyExit);
  return {
    addr,
    lines,
    child,
    exited,
    stderr: () => stderr,
    extraStdout: () => stdout,
    async stop(signal = 'SIGTERM', { timeoutMs: t = 15000 } = {}) {
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), t);
      const r = await exited;
      clearTimeout(timer);
      return r;
    },
  };
}

// ---------------------------------------------------------------- HTTP

export function h1(addr, { method = 'GET', path: p = '/', headers = {}, body, agent = false } = {}) {
  const [host, port] = addr.split(':');
  const mod = TLS ? https : http;
  return new Promise((resolve, reject) => {
    const req = mod.request({
      host, port: Number(port), method, path: p, headers, agent,
      ...(TLS ? { ca: TLS.ca, servername: 'localhost', ALPNProtocols: ['http/1.1'] } : {}),
    }, (res) => {
      const chunks = [];
      const alpn = res.socket?.alpnProtocol;
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks), alpn }));
      res.on('error', reject);
    });
    req.setTimeout(60000, () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    if (body !== undefined) req.end(body); else req.end();
  });
}

export function h2(addr, { method = 'GET', path: p = '/', headers = {}, body } = {}) {
  const url = `${TLS ? 'https' : 'http'}://${addr}`;
  return new Promise((resolve, reject) => {
    const session = http2.connect(url, TLS ? { ca: TLS.ca, servername: 'localhost' } : {});
    session.on('error', reject);
    const req = session.request({ ':method': method, ':path': p, ...headers });
    const chunks = [];
    let head;
    req.setTimeout(60000, () => { req.close(); reject(new Error('timeout')); });
    req.on('response', (h) => { head = h; });
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const alpn = session.alpnProtocol;
      session.close();
      resolve({ status: head[':status'], headers: head, body: Buffer.concat(chunks), alpn });
    });
    req.on('error', (e) => { session.close(); reject(e); });
    if (body !== undefined) req.end(body); else req.end();
  });
}

// ---------------------------------------------------------------- gRPC

export function grpcClient(addr) {
  const creds = TLS ? grpc.credentials.createSsl(TLS.ca) : grpc.credentials.createInsecure();
  return new grpc.Client(addr, creds, {
    'grpc.max_receive_message_length': -1,
    'grpc.max_send_message_length': -1,
    ...(TLS ? { 'grpc.ssl_target_name_override': 'localhost', 'grpc.default_authority': 'localhost' } : {}),
  });
}

// Raw unary call: Buffer in, {err, body} out.
export function grpcRaw(client, method, buf) {
  return new Promise((resolve) => {
    client.makeUnaryRequest(method, (b) => b, (b) => b, buf, { deadline: Date.now() + 60000 }, (err, res) => resolve({ err, body: res }));
  });
}

// ---------------------------------------------------------------- comparison

// JSON: values, `null` treated as absent, numbers by value.
export function normJson(v) {
  if (Array.isArray(v)) return v.map(normJson);
  if (v !== null && typeof v === 'object') {
    const out = {};
    for (const k of Object.keys(v).sort()) if (v[k] !== null) out[k] = normJson(v[k]);
    return out;
  }
  return v;
}

export function assertJsonEqual(actual, expected, msg) {
  assert.deepStrictEqual(normJson(actual), normJson(expected), msg);
}

export function pbType(fullName) {
  return model.root.lookupType(fullName);
}

export function decodePb(fullName, buf) {
  const t = pbType(fullName);
  return t.toObject(t.decode(buf), { longs: String, enums: String, bytes: String, defaults: true, arrays: true });
}

// XML: parse with namespaces, then decode strictly against the model:
// elements in urn:protobench:v1, in field-number order, every non-optional
// field present, repeated fields unwrapped.
export function parseXml(text) {
  const p = sax.parser(true, { xmlns: true });
  const root = { children: [] };
  const stack = [root];
  let doctype = false;
  p.ondoctype = () => { doctype = true; };
  p.onopentag = (n) => {
    const el = { uri: n.uri, local: n.local, prefix: n.prefix, ns: n.ns, children: [], text: '' };
    stack[stack.length - 1].children.push(el);
    stack.push(el);
  };
  p.onclosetag = () => { stack.pop(); };
  p.ontext = (t) => { stack[stack.length - 1].text += t; };
  p.oncdata = (t) => { stack[stack.length - 1].text += t; };
  p.onerror = (e) => { throw e; };
  p.write(text).close();
  assert.equal(doctype, false, 'response has a DOCTYPE');
  assert.equal(root.children.length, 1);
  return root.children[0];
}

export function soapBodyElement(text) {
  const env = parseXml(text);
  assert.equal(env.uri, SOAP_ENV, 'Envelope namespace');
  assert.equal(env.local, 'Envelope');
  const body = env.children.find((c) => c.local === 'Body');
  assert.ok(body && body.uri === SOAP_ENV, 'soap:Body');
  assert.equal(body.children.length, 1, 'one element in Body');
  return body.children[0];
}

function xmlScalar(f, el, where) {
  assert.equal(el.children.length, 0, `${where}: unexpected child elements`);
  const t = el.text;
  switch (f.kind) {
    case 'int32': case 'uint32': assert.match(t, /^-?\d+$/, where); return Number(t);
    case 'int64': case 'uint64': assert.match(t, /^-?\d+$/, where); return BigInt(t).toString();
    case 'double': case 'float': {
      const n = Number(t.trim());
      assert.ok(t.trim() !== '' && !Number.isNaN(n), `${where}: number`);
      return f.float32 ? Math.fround(n) : n;
    }
    case 'bool': assert.ok(t === 'true' || t === 'false', `${where}: boolean ${t}`); return t === 'true';
    case 'string': return t;
    case 'bytes': return Buffer.from(t, 'base64').toString('base64');
    case 'enum': assert.ok(t in f.enumValues, `${where}: enum ${t}`); return t;
    default: throw new Error(f.kind);
  }
}

export function decodeXmlMessage(info, el, where = el.local) {
  const out = {};
  let lastIndex = -1;
  let lastField = null;
  for (const c of el.children) {
    assert.equal(c.uri, PB_NS, `${where}/${c.local}: namespace`);
    const f = info.fields.find((x) => x.name === c.local);
    assert.ok(f, `${where}/${c.local}: unknown element`);
    assert.ok(f.index > lastIndex || (f === lastField && f.repeated), `${where}/${c.local}: out of field order or repeated`);
    lastIndex = f.index;
    lastField = f;
    const v = f.kind === 'message' ? decodeXmlMessage(f.message, c, `${where}/${c.local}`) : xmlScalar(f, c, `${where}/${c.local}`);
    if (f.repeated) (out[f.name] ??= []).push(v); else out[f.name] = v;
  }
  assert.equal(el.text.trim(), '', `${where}: text in a message element`);
  for (const f of info.fields) {
    if (f.repeated) out[f.name] ??= [];
    else if (!f.presence) assert.ok(f.name in out, `${where}/${f.name}: missing (non-optional field)`);
  }
  return out;
}

// Decodes a whole SOAP envelope holding <name> of message `info`.
export function decodeSoap(text, elementName, info) {
  const el = soapBodyElement(text);
  assert.equal(el.uri, PB_NS, 'body element namespace');
  assert.equal(el.local, elementName);
  return decodeXmlMessage(info, el);
}

export function soapFault(text) {
  const el = soapBodyElement(text);
  assert.equal(el.uri, SOAP_ENV);
  assert.equal(el.local, 'Fault');
  const code = el.children.find((c) => c.local === 'faultcode');
  const str = el.children.find((c) => c.local === 'faultstring');
  assert.ok(code && str, 'faultcode and faultstring');
  const [prefix, local] = code.text.trim().split(':');
  assert.equal(code.ns[prefix] ?? el.ns[prefix], SOAP_ENV, 'faultcode prefix bound to the SOAP envelope namespace');
  return { code: local, string: str.text };
}

export function soapEnvelope(inner) {
  return `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="${SOAP_ENV}"><soap:Body>${inner}</soap:Body></soap:Envelope>`;
}

export function vector(workload, file) {
  return fs.readFileSync(path.join(vectorsDir, workload, file));
}

// Reference failure draw (independent of src/): number of failures among
// request numbers 0..n-1.
export function splitmixFailures(seed, rate, n) {
  const M = (1n << 64n) - 1n;
  let count = 0;
  for (let k = 0n; k < BigInt(n); k++) {
    let z = (BigInt(seed) + k + 0x9E3779B97F4A7C15n) & M;
    z = ((z ^ (z >> 30n)) * 0xBF58476D1CE4E5B9n) & M;
    z = ((z ^ (z >> 27n)) * 0x94D049BB133111EBn) & M;
    z ^= z >> 31n;
    if (Number(z) / 2 ** 64 < rate) count++;
  }
  return count;
}
