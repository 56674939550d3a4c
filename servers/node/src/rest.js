// REST (HTTP/1.1) and REST over HTTP/2: one fastify application, built once
// per listener (fastify binds one server per instance).
import Fastify from 'fastify';
import { OPERATIONS } from './service.js';
import { ApiError } from './errors.js';
import { decodeMessage, jsonSchema, bytesToBase64 } from './jsoncodec.js';
import { registerStreams } from './streamhttp.js';

const STATUS_OF_KIND = { invalid: 400, notfound: 404, injected: 500 };

// Answers what Node's HTTP/1.1 parser refuses before a request reaches
// fastify (fastify's clientErrorHandler): the read timeout with 408, the
// rest with 400/431, in the given error form, never with the parser's own
// message (which names its internal error codes).
export function clientErrorHandler(format) {
  return (err, socket) => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    let status = 400;
    let message = 'malformed HTTP request';
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      status = 408;
      message = 'request not received within the read timeout';
    } else if (err.code === 'HPE_HEADER_OVERFLOW') {
      status = 431;
      message = 'request headers too large';
    }
    if (socket.writable && !socket._httpMessage?.headersSent) {
      const { type, body } = format(status, message);
      const reason = { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' }[status];
      socket.write(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: ${type}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    }
    socket.destroy();
  };
}

const jsonError = (status, message) => ({ type: 'application/json; charset=utf-8', body: JSON.stringify({ code: status, message }) });

// Closes a connection on which no request has begun (its headers have not
// all arrived) within ms of its start (TCP accept, or the end of the TLS
// handshake): Node's headersTimeout alone would wait the read timeout.
export function closeIfNoRequest(server, event, ms) {
  const pending = new WeakMap();
  server.on(event, (socket) => {
    const timer = setTimeout(() => socket.destroy(), ms);
    timer.unref();
    pending.set(socket, timer);
    socket.once('close', () => clearTimeout(timer));
  });
  const started = (req) => {
    const timer = pending.get(req.socket);
    if (timer !== undefined) {
      clearTimeout(timer);
      pending.delete(req.socket);
    }
  };
  server.prependListener('request', started);
  // a WebSocket upgrade request is a request too
  server.prependListener('upgrade', started);
}

// The server-limit settings of contract/README.md, all Node's and
// fastify's own:
// - HTTP/1.1: headersTimeout = requestTimeout = PROTOBENCH_READ_TIMEOUT (a
//   total for the request's headers, and headers plus body, from its first
//   byte; Node answers 408 and closes; connectionsCheckingInterval makes
//   Node check them often enough for a short timeout); keepAliveTimeout =
//   PROTOBENCH_IDLE_TIMEOUT between requests, and closeIfNoRequest before
//   the first one.
// - HTTP/2: fastify's http2SessionTimeout = PROTOBENCH_IDLE_TIMEOUT (an
//   inactivity timeout on the session: no frame either way for that long
//   closes it gracefully with GOAWAY); SETTINGS_MAX_CONCURRENT_STREAMS =
//   PROTOBENCH_MAX_STREAMS.
// - TLS: handshakeTimeout = PROTOBENCH_IDLE_TIMEOUT.
export function fastifyServerOptions(config, { http2, format = jsonError }) {
  const opts = {
    logger: false, // no per-request logging
    bodyLimit: config.maxRequestBytes,
    // return 503 to requests arriving while closing; in-flight ones finish
    return503OnClosing: true,
  };
  const tlsOpts = config.tls ? { key: config.tls.key, cert: config.tls.cert, handshakeTimeout: config.idleTimeoutMs } : null;
  if (http2) {
    opts.http2 = true;
    // on close, gracefully close HTTP/2 sessions too (GOAWAY; streams in
    // flight finish): fastify does this only with forceCloseConnections=true
    // on Node < 24. HTTP/2 requests are never tracked as keep-alive sockets,
    // so nothing is destroyed abruptly.
    opts.forceCloseConnections = true;
    opts.http2SessionTimeout = config.idleTimeoutMs;
    const settings = { maxConcurrentStreams: config.maxStreams };
    if (tlsOpts) opts.https = { ...tlsOpts, allowHTTP1: false, ALPNProtocols: ['h2'], settings };
    else opts.http = { settings };
  } else {
    opts.keepAliveTimeout = config.idleTimeoutMs;
    opts.requestTimeout = config.readTimeoutMs;
    opts.clientErrorHandler = clientErrorHandler(format);
    const httpOpts = {
      headersTimeout: config.readTimeoutMs,
      requestTimeout: config.readTimeoutMs,
      keepAliveTimeout: config.idleTimeoutMs,
      connectionsCheckingInterval: Math.max(10, Math.min(1000, Math.floor(config.readTimeoutMs / 4))),
    };
    if (tlsOpts) opts.https = { ...tlsOpts, ...httpOpts, ALPNProtocols: ['http/1.1'] };
    else opts.http = httpOpts;
  }
  return opts;
}

// Applies what fastifyServerOptions cannot: closeIfNoRequest on HTTP/1.1.
export function limitFastify(app, config, { http2 }) {
  if (!http2) closeIfNoRequest(app.server, config.tls ? 'secureConnection' : 'connection', config.idleTimeoutMs);
  return app;
}

export function errorBody(reply, status, message) {
  reply.code(status).type('application/json').send({ code: status, message });
}

// Maps every error to the contract's {"code", "message"} body; never leaks
// stack traces or internals.
export function restErrorHandler(err, _request, reply) {
  if (err instanceof ApiError) return errorBody(reply, STATUS_OF_KIND[err.kind], err.message);
  const status = err.statusCode;
  if (Number.isInteger(status) && status >= 400 && status < 500) {
    let message = err.message;
    if (err instanceof SyntaxError || err.code === 'FST_ERR_CTP_INVALID_JSON_BODY') message = `malformed JSON: ${err.message}`;
    return errorBody(reply, status, message);
  }
  return errorBody(reply, 500, 'internal error');
}

export function buildRest(config, model, service, { http2 }) {
  const app = limitFastify(Fastify(fastifyServerOptions(config, { http2 })), config, { http2 });

  // Only JSON bodies are accepted: drop fastify's default text/plain parser,
  // so any other content type gets 415 from fastify (the default
  // application/json parser, secure-json-parse, stays; charset is allowed).
  app.removeContentTypeParser('text/plain');

  app.setErrorHandler(restErrorHandler);
  app.setNotFoundHandler((_request, reply) => errorBody(reply, 404, 'not found'));

  // Known path, wrong method: 405 with Allow, answered in onRequest, i.e.
  // before any body is read or parsed.
  const methodNotAllowed = (url, allow) => {
    const allowed = allow.split(', ');
    app.route({
      method: app.supportedMethods.filter((m) => !allowed.includes(m)),
      url,
      onRequest: (_request, reply) => {
        // replying from the hook ends the request here (done is not called)
        reply.header('allow', allow);
        errorBody(reply, 405, `method not allowed; allowed: ${allow}`);
      },
      handler: () => {},
    });
  };
  for (const [op, def] of Object.entries(OPERATIONS)) {
    const [method, url] = def.rest;
    const reqInfo = model.get(def.request);
    const resInfo = model.get(def.response);
    const toJson = bytesToBase64(resInfo);
    let decode;
    if (method === 'POST') decode = (request) => decodeMessage(reqInfo, request.body);
    else if (op === 'GetFile') decode = (request) => ({ name: request.params.name });
    else decode = () => ({});

    const handler = toJson
      ? async (request) => toJson(await service.invoke(op, decode(request)))
      : async (request) => service.invoke(op, decode(request));

    app.route({
      method,
      url,
      // fastify serializes with fast-json-stringify from this schema (its
      // documented way to speed up serialization); every field is emitted.
      schema: { response: { 200: jsonSchema(resInfo) } },
      handler,
    });

    methodNotAllowed(url, method === 'GET' ? 'GET, HEAD' : method);
  }
  registerStreams(app, config, model, service, { http2, errorBody, methodNotAllowed });
  return app;
}
