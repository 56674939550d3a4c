// Connect and gRPC-Web (contract/README.md "Connect and gRPC-Web") with
// connect-es: @connectrpc/connect-node's adapter serves the Connect
// protocol (protobuf and JSON bodies) and gRPC-Web (binary and text) for
// protobench.v1.Bench and helloworld.Greeter, on plain Node HTTP/1.1
// servers with the REST listener's limits (read and idle timeouts, TLS
// handshake timeout; readMaxBytes = PROTOBENCH_MAX_REQUEST_BYTES, over it
// `resource_exhausted`). The three listeners (`connect`, `connect-json`,
// `grpc-web`) share one handler, so each accepts every form; they differ by
// what the benchmark's client sends. gRPC-Web's text form
// (`grpc-web-text`) is not served: connect-es does not implement it.
//
// The service descriptors are generated at build time by protoc-gen-es
// (`npm run generate`, into gen/, not committed). A call is decoded by
// connect-es into its message, converted through the message's canonical
// JSON (toJson / fromJson) to and from the native objects every other
// protocol works on, and run by Service.invoke (validation, service time,
// failure draw). That conversion is a cost the other protocols do not pay
// (README, "Notable points").
import http from 'node:http';
import https from 'node:https';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import { ConnectError, Code } from '@connectrpc/connect';
import { toJson, fromJson } from '@bufbuild/protobuf';
import { Bench } from '../gen/protobench/v1/protobench_pb.js';
import { Greeter } from '../gen/helloworld/helloworld_pb.js';
import { Streams, FeedEventSchema, FeedPageSchema, UploadSummarySchema } from '../gen/protobench/v1/stream_pb.js';
import { Feed, Tally, TOO_MANY_MESSAGES, nowNs, pollPage, validatePoll, validateSubscribe } from './stream.js';
import { OPERATIONS } from './service.js';
import { ApiError } from './errors.js';
import { decodeMessage, bytesToBase64 } from './jsoncodec.js';
import { clientErrorHandler, closeIfNoRequest, fastifyServerOptions } from './rest.js';


const CODE_OF_KIND = { invalid: Code.InvalidArgument, notfound: Code.NotFound, injected: Code.Unavailable };

function implementation(service, model, desc) {
  const impl = {};
  for (const method of desc.methods) {
    const op = OPERATIONS[method.name];
    const reqInfo = model.get(op.request);
    const resInfo = model.get(op.response);
    const toJsonable = bytesToBase64(resInfo) ?? ((o) => o);
    impl[method.localName] = async (request) => {
      try {
        const native = decodeMessage(reqInfo, toJson(method.input, request));
        const res = await service.invoke(method.name, native);
        return fromJson(method.output, toJsonable(res));
      } catch (e) {
        throw connectError(e);
      }
    };
  }
  return impl;
}

const connectError = (e) => (e instanceof ApiError ? new ConnectError(e.message, CODE_OF_KIND[e.kind]) : e);

// protobench.v1.Streams over Connect and gRPC-Web (HTTP/1.1): the
// subscription (server streaming), the upload (client streaming) and the
// poll; EchoStream needs a full-duplex stream (HTTP/2) and is not served
// (connect-es answers `unimplemented`). Admitted like the gRPC streams
// (src/grpcstream.js): the request validated, then the service time and
// the failure draw once, before the first message; an event is built when
// connect-es asks for the next one (it writes one at a time).
function streamsImplementation(service) {
  const data = service.data;
  return {
    async *subscribe(req, ctx) {
      const request = { count: req.count, items: req.items, rate: req.rate };
      try {
        validateSubscribe(request);
        await service.admit();
      } catch (e) {
        throw connectError(e);
      }
      const feed = new Feed(data, request);
      for (;;) {
        if (ctx.signal.aborted) return;
        const event = await feed.nextEvent();
        if (event === null) return;
        yield fromJson(FeedEventSchema, event);
      }
    },
    async upload(messages) {
      try {
        await service.admit();
      } catch (e) {
        throw connectError(e);
      }
      const tally = new Tally();
      for await (const m of messages) {
        if (!tally.add(m)) throw new ConnectError(TOO_MANY_MESSAGES, Code.ResourceExhausted);
      }
      return fromJson(UploadSummarySchema, tally.summary());
    },
    async poll(req) {
      try {
        const request = { count: req.count, items: req.items, rate: req.rate, startNs: String(req.startNs), after: req.after, max: req.max };
        validatePoll(request);
        await service.admit();
        return fromJson(FeedPageSchema, pollPage(data, request, nowNs()));
      } catch (e) {
        throw connectError(e);
      }
    },
  };
}

// The Node request handler serving Connect and gRPC-Web.
export function connectHandler(config, model, service) {
  return connectNodeAdapter({
    routes: (router) => {
      router.service(Bench, implementation(service, model, Bench));
      router.service(Greeter, implementation(service, model, Greeter));
      router.service(Streams, streamsImplementation(service));
    },
    connect: true,
    grpcWeb: true,
    grpc: false,
    readMaxBytes: config.maxRequestBytes,
  });
}

// One HTTP/1.1 listener of the handler, with the REST listener's limits.
export function buildConnectServer(config, handler) {
  const opts = fastifyServerOptions(config, { http2: false });
  const server = config.tls ? https.createServer(opts.https, handler) : http.createServer(opts.http, handler);
  server.keepAliveTimeout = config.idleTimeoutMs;
  server.on('clientError', clientErrorHandler((status, message) => ({
    type: 'application/json', body: JSON.stringify({ code: status === 408 ? 'deadline_exceeded' : 'invalid_argument', message }),
  })));
  closeIfNoRequest(server, config.tls ? 'secureConnection' : 'connection', config.idleTimeoutMs);
  if (config.tls) server.on('tlsClientError', (_err, socket) => socket.destroy());
  return server;
}
