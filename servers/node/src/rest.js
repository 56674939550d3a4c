// REST (HTTP/1.1) and REST over HTTP/2: one fastify application, built once
// per listener (fastify binds one server per instance).
import Fastify from 'fastify';
import { OPERATIONS } from './service.js';
import { ApiError } from './errors.js';
import { decodeMessage, jsonSchema, bytesToBase64 } from './jsoncodec.js';

const STATUS_OF_KIND = { invalid: 400, notfound: 404, injected: 500 };

export function fastifyServerOptions(config, { http2 }) {
  const opts = {
    logger: false, // no per-request logging
    bodyLimit: config.maxRequestBytes,
    // return 503 to requests arriving while closing; in-flight ones finish
    return503OnClosing: true,
  };
  if (http2) {
    opts.http2 = true;
    // on close, gracefully close HTTP/2 sessions too (GOAWAY; streams in
    // flight finish): fastify does this only with forceCloseConnections=true
    // on Node < 24. HTTP/2 requests are never tracked as keep-alive sockets,
    // so nothing is destroyed abruptly.
    opts.forceCloseConnections = true;
    if (config.tls) opts.https = { key: config.tls.key, cert: config.tls.cert, allowHTTP1: false, ALPNProtocols: ['h2'] };
  } else if (config.tls) {
    opts.https = { key: config.tls.key, cert: config.tls.cert, ALPNProtocols: ['http/1.1'] };
  }
  return opts;
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
  const app = Fastify(fastifyServerOptions(config, { http2 }));

  // Only JSON bodies are accepted: drop fastify's default text/plain parser,
  // so any other content type gets 415 from fastify (the default
  // application/json parser, secure-json-parse, stays; charset is allowed).
  app.removeContentTypeParser('text/plain');

  app.setErrorHandler(restErrorHandler);
  app.setNotFoundHandler((_request, reply) => errorBody(reply, 404, 'not found'));

  const methods = app.supportedMethods;
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

    // Known path, wrong method: 405 with Allow, answered in onRequest, i.e.
    // before any body is read or parsed.
    const allow = method === 'GET' ? 'GET, HEAD' : method;
    const others = methods.filter((m) => m !== method && !(method === 'GET' && m === 'HEAD'));
    app.route({
      method: others,
      url,
      onRequest: (_request, reply) => {
        // replying from the hook ends the request here (done is not called)
        reply.header('allow', allow);
        errorBody(reply, 405, `method not allowed; allowed: ${allow}`);
      },
      handler: () => {},
    });
  }
  return app;
}
