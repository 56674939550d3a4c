// protobench reference server for Node.js: REST (fastify), REST over HTTP/2
// (fastify, http2: true), gRPC (@grpc/grpc-js), SOAP (node-soap behind
// fastify), GraphQL (graphql-js + graphql-http behind fastify; POST, and GET
// for persisted queries on its own `graphql-get` listener), Connect and
// gRPC-Web (connect-es on Node's http), with the
// streaming operations on the REST and gRPC listeners, configured only by
// the PROTOBENCH_* environment variables.
//
// Process model: PROTOBENCH_WORKERS = 1 runs everything in this process;
// N > 1 forks N node:cluster workers, each serving every protocol on the
// listening sockets the cluster primary shares with them.
import cluster from 'node:cluster';
import net from 'node:net';
import dns from 'node:dns/promises';
import { loadConfig, formatAddr, ConfigError } from './config.js';
import { loadModel } from './model.js';
import { Service } from './service.js';
import { buildRest } from './rest.js';
import { buildGrpc, listenGrpc } from './grpc.js';
import { buildSoap } from './soap.js';
import { announceWorker, onPrimaryMessage, primaryRelay } from './apq.js';

// Not `grpc-web-text`: connect-es does not serve it (src/connect.js).
const CONNECT_PROTOCOLS = ['connect', 'connect-json', 'grpc-web'];
// `graphql-get` is the `graphql` handler on its own listener (src/graphql.js).
const GRAPHQL_PROTOCOLS = ['graphql', 'graphql-get'];
const PROTOCOLS = ['rest', 'rest-h2', 'grpc', 'soap', ...GRAPHQL_PROTOCOLS, ...CONNECT_PROTOCOLS];
const DRAIN_MS = 10000;

function fail(err) {
  process.stderr.write(`protobench node server: ${err instanceof ConfigError ? err.message : (err && err.stack) || err}\n`);
  process.exit(1);
}

async function resolveHost(addr) {
  if (net.isIP(addr.host)) return addr;
  const { address } = await dns.lookup(addr.host);
  return { ...addr, host: address };
}

// fastify.close() stops accepting, closes idle keep-alive connections (and,
// for HTTP/2, sessions) and waits for requests in flight. A keep-alive
// connection whose request finishes after that stays open until the client
// closes it, so idle connections are closed again every 100 ms meanwhile.
async function closeFastify(app) {
  const timer = setInterval(() => app.server.closeIdleConnections?.(), 100);
  try {
    await app.close();
  } finally {
    clearInterval(timer);
  }
}

// The same for a plain Node HTTP server.
async function closeHttp(server) {
  const timer = setInterval(() => server.closeIdleConnections(), 100);
  try {
    await new Promise((resolve) => server.close(() => resolve()));
  } finally {
    clearInterval(timer);
  }
}

// Starts every configured listener in this process; returns
// {listening: [{protocol, addr, tls}], close()}.
async function serve(config) {
  const model = loadModel();
  const service = new Service(config, model);
  const tls = !!config.tls;
  const listening = [];
  const closers = [];
  let connect = null;
  let graphql = null;
  // Listeners are opened one after the other in a fixed order, so cluster
  // workers asking for port 0 all share the same sockets.
  for (const protocol of PROTOCOLS) {
    const given = config.addrs[protocol];
    if (!given) continue;
    const addr = await resolveHost(given);
    if (CONNECT_PROTOCOLS.includes(protocol)) {
      // GraphQL's and connect-es' modules are loaded only when served
      // (start-up opens fewer files).
      const { connectHandler, buildConnectServer } = await import('./connect.js');
      connect ??= connectHandler(config, model, service);
      const server = buildConnectServer(config, connect);
      await new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen({ host: addr.host, port: addr.port }, () => { server.off('error', reject); resolve(); });
      });
      server.on('error', () => {});
      closers.push(() => closeHttp(server));
      const a = server.address();
      listening.push({ protocol, addr: formatAddr(a.address, a.port), tls });
    } else if (protocol === 'grpc') {
      const server = buildGrpc(config, model, service);
      const { port, close } = await listenGrpc(server, config, addr);
      closers.push(() => close(DRAIN_MS));
      listening.push({ protocol, addr: formatAddr(addr.host, port), tls });
    } else {
      let app;
      if (protocol === 'soap') app = await buildSoap(config, model, service);
      else if (GRAPHQL_PROTOCOLS.includes(protocol)) {
        const { graphqlHandler, buildGraphql } = await import('./graphql.js');
        graphql ??= graphqlHandler(config, model, service);
        app = buildGraphql(config, graphql);
      }
      else app = buildRest(config, model, service, { http2: protocol === 'rest-h2' });
      await app.listen({ host: addr.host, port: addr.port, listenTextResolver: () => '' });
      // After listen, the only errors a listening server emits are accept
      // errors; libuv absorbs EMFILE itself (README), and no other one may
      // stop the process.
      app.server.on('error', () => {});
      closers.push(() => closeFastify(app));
      const a = app.server.address();
      listening.push({ protocol, addr: formatAddr(a.address, a.port), tls });
    }
  }
  let closing = null;
  const close = () => {
    closing ??= Promise.race([
      Promise.allSettled(closers.map((c) => c())),
      new Promise((r) => setTimeout(r, DRAIN_MS + 500).unref()),
    ]);
    return closing;
  };
  return { listening, close };
}

function printListening(listening) {
  // process.stdout is synchronous for files and pipes on Linux, so each line
  // is flushed when write returns.
  for (const l of listening) process.stdout.write(`listening protocol=${l.protocol} addr=${l.addr} tls=${l.tls}\n`);
}

function onSignals(handler) {
  process.once('SIGTERM', handler);
  process.once('SIGINT', handler);
}

async function single(config) {
  const s = await serve(config);
  onSignals(async () => {
    await s.close();
    process.exit(0);
  });
  printListening(s.listening);
}

function primary(config) {
  let shuttingDown = false;
  let printed = false;
  const ready = new Set();
  let firstListening = null;
  // persisted GraphQL documents registered in one worker reach every worker
  const apq = primaryRelay();
  const spawn = () => {
    const w = cluster.fork();
    w.on('message', (msg) => {
      if (apq.onMessage(w, msg)) return;
      if (msg && msg.type === 'listening') {
        ready.add(w.id);
        firstListening ??= msg.listening;
        if (!printed && ready.size >= config.workers) {
          printed = true;
          printListening(firstListening);
        }
      } else if (msg && msg.type === 'fatal') {
        process.stderr.write(`protobench node server: worker failed: ${msg.error}\n`);
        shuttingDown = true;
        for (const other of Object.values(cluster.workers)) other.process.kill('SIGKILL');
        process.exit(1);
      }
    });
    return w;
  };
  for (let i = 0; i < config.workers; i++) spawn();
  cluster.on('exit', (w, code, signal) => {
    ready.delete(w.id);
    apq.onExit(w);
    if (shuttingDown) {
      if (Object.keys(cluster.workers).length === 0) process.exit(0);
      return;
    }
    // a worker died unexpectedly: replace it (it rejoins the shared sockets)
    process.stderr.write(`protobench node server: worker ${w.process.pid} exited (${signal || code}); restarting\n`);
    spawn();
  });
  onSignals(() => {
    shuttingDown = true;
    const workers = Object.values(cluster.workers);
    if (workers.length === 0) process.exit(0);
    for (const w of workers) w.send({ type: 'shutdown' });
    setTimeout(() => {
      for (const w of Object.values(cluster.workers)) w.process.kill('SIGKILL');
      process.exit(0);
    }, DRAIN_MS + 2000).unref();
  });
}

async function worker(config) {
  let s = null;
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    if (s) await s.close();
    process.exit(0);
  };
  // The primary asks for shutdown over IPC; a signal sent to the whole
  // process group (Ctrl-C) reaches the worker directly.
  onSignals(stop);
  process.on('message', (msg) => {
    if (onPrimaryMessage(msg)) return;
    if (msg && msg.type === 'shutdown') stop();
  });
  announceWorker();
  try {
    s = await serve(config);
  } catch (e) {
    process.send({ type: 'fatal', error: String((e && e.message) || e) });
    return;
  }
  process.send({ type: 'listening', listening: s.listening });
}

let config;
try {
  config = loadConfig();
} catch (e) {
  fail(e);
}
if (config.workers === 1) single(config).catch(fail);
else if (cluster.isPrimary) primary(config);
else worker(config).catch(fail);
