// gRPC: @grpc/grpc-js with the service definitions loaded at start-up by
// @grpc/proto-loader from ../../contract/proto (the dynamic code generation
// grpc-js documents), plus server reflection from @grpc/reflection.
import tls from 'node:tls';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';
import { ReflectionService } from '@grpc/reflection';
import { protoDir, formatAddr } from './config.js';
import { PROTO_FILES } from './model.js';
import { OPERATIONS } from './service.js';
import { UndecodableRequest, toStatus } from './grpcstatus.js';
import { streamHandlers } from './grpcstream.js';
import { addWireIndex, checkWire, WireError } from './pbcheck.js';

export const LOADER_OPTIONS = {
  keepCase: false, // lowerCamelCase field names, the same native objects as REST/SOAP
  longs: String, // int64 as decimal strings
  enums: String, // enums by name
  defaults: true, // every non-presence field set, also at its default
  arrays: true,
  oneofs: false, // no virtual oneof-discriminator properties
  includeDirs: [protoDir],
};

// grpc-js answers a request its deserializer throws on with INTERNAL; the
// contract wants INVALID_ARGUMENT, so the proto-loader deserializers are
// wrapped: a message that fails our strict wire check (or protobufjs)
// becomes an UndecodableRequest, which the handler reports.
export function strictDefinition(service, model, requestTypes) {
  const definition = {};
  for (const [name, m] of Object.entries(service)) {
    const decode = m.requestDeserialize;
    const info = model.get(requestTypes[name]);
    definition[name] = {
      ...m,
      requestDeserialize: (buf) => {
        try {
          checkWire(info, buf);
          return decode(buf);
        } catch (e) {
          // our wire check says what is wrong; whatever protobufjs
          // throws after it passed could name protobufjs' own code
          const why = e instanceof WireError ? e.message : 'invalid protobuf encoding';
          return new UndecodableRequest(`undecodable ${info.fullName} message: ${why}`);
        }
      },
    };
  }
  return definition;
}

let cachedDefinition = null;

// The proto-loader package definition of the contract's .proto files,
// loaded once per process (gRPC and the WebSocket codecs share it).
export function loadPackageDefinition() {
  cachedDefinition ??= protoLoader.loadSync(PROTO_FILES, LOADER_OPTIONS);
  return cachedDefinition;
}

export function buildGrpc(config, model, service) {
  addWireIndex(model);
  const packageDefinition = loadPackageDefinition();
  const pkg = grpc.loadPackageDefinition(packageDefinition);

  const server = new grpc.Server({
    // requests up to the contract's size limit (RESOURCE_EXHAUSTED above it)
    'grpc.max_receive_message_length': config.maxRequestBytes,
    // responses of any size (file-3m4 is 3.4 MB; CloneText up to 64 MiB)
    'grpc.max_send_message_length': -1,
    // PROTOBENCH_IDLE_TIMEOUT: a session with no open stream for this long
    // (counted from its start or its last stream's end) is closed
    'grpc.max_connection_idle_ms': config.idleTimeoutMs,
    // PROTOBENCH_MAX_STREAMS: SETTINGS_MAX_CONCURRENT_STREAMS
    'grpc.max_concurrent_streams': config.maxStreams,
  });

  const services = {};
  for (const [op, def] of Object.entries(OPERATIONS)) {
    const svcName = def.grpcService ?? 'protobench.v1.Bench';
    let svc = services[svcName];
    if (!svc) {
      const ctor = svcName.split('.').reduce((o, k) => o[k], pkg);
      const requestTypes = Object.fromEntries(Object.keys(ctor.service).map((n) => [n, OPERATIONS[n].request]));
      const definition = strictDefinition(ctor.service, model, requestTypes);
      svc = services[svcName] = { definition, handlers: {} };
    }
    svc.handlers[op] = (call, callback) => {
      const req = call.request;
      if (req instanceof UndecodableRequest) {
        callback({ code: grpc.status.INVALID_ARGUMENT, details: req.message });
        return;
      }
      let res;
      try {
        res = service.invoke(op, req);
      } catch (e) {
        callback(toStatus(e));
        return;
      }
      if (res && typeof res.then === 'function') res.then((v) => callback(null, v), (e) => callback(toStatus(e)));
      else callback(null, res);
    };
  }
  // protobench.v1.Streams (contract/README.md "Streaming"): src/grpcstream.js
  const streams = pkg.protobench.v1.Streams.service;
  const streamTypes = Object.fromEntries(Object.entries(streams).map(([n, m]) => [n, `protobench.v1.${m.requestType.type.name}`]));
  services['protobench.v1.Streams'] = { definition: strictDefinition(streams, model, streamTypes), handlers: streamHandlers(service) };
  for (const { definition, handlers } of Object.values(services)) server.addService(definition, handlers);
  new ReflectionService(packageDefinition).addToServer(server);
  return server;
}

// Binds the gRPC listener; resolves to {port, close(graceMs)}.
//
// Clear text: grpc-js binds it (bindAsync). TLS: Node's own tls.Server
// listens and does the handshake, with handshakeTimeout =
// PROTOBENCH_IDLE_TIMEOUT (grpc-js has no setting for it and would wait
// Node's default 120 s for a handshake that never completes); each
// connection that finishes it (ALPN h2) is handed to grpc-js through its
// public connection injector, so grpc-js serves it exactly as one it
// accepted itself (same options, idle timeout, streams limit, handlers).
export function listenGrpc(server, config, addr) {
  if (!config.tls) {
    return new Promise((resolve, reject) => {
      server.bindAsync(formatAddr(addr.host, addr.port), grpc.ServerCredentials.createInsecure(), (err, port) => (
        err ? reject(err) : resolve({ port, close: (graceMs) => closeGrpc(server, graceMs) })));
    });
  }
  const injector = server.createConnectionInjector(grpc.ServerCredentials.createInsecure());
  const tlsServer = tls.createServer({
    key: config.tls.key,
    cert: config.tls.cert,
    ALPNProtocols: ['h2'],
    handshakeTimeout: config.idleTimeoutMs,
  }, (socket) => {
    // errors after the handshake (a peer's reset) end the session; they
    // must not be unhandled
    socket.on('error', () => {});
    injector.injectConnection(socket);
  });
  // A handshake that fails or times out ends here: Node reports it but
  // leaves the socket open.
  tlsServer.on('tlsClientError', (_err, socket) => socket.destroy());
  const close = (graceMs) => Promise.all([
    new Promise((resolve) => tlsServer.close(() => resolve())),
    closeGrpc(server, graceMs),
  ]);
  return new Promise((resolve, reject) => {
    tlsServer.once('error', reject);
    tlsServer.listen({ host: addr.host, port: addr.port }, () => {
      tlsServer.off('error', reject);
      // An accept() failure is reported here; the server keeps listening
      // (libuv absorbs EMFILE itself, see README).
      tlsServer.on('error', () => {});
      resolve({ port: tlsServer.address().port, close });
    });
  });
}

export function closeGrpc(server, graceMs) {
  return new Promise((resolve) => {
    const t = setTimeout(() => { server.forceShutdown(); resolve(); }, graceMs);
    t.unref();
    server.tryShutdown(() => { clearTimeout(t); resolve(); });
  });
}
