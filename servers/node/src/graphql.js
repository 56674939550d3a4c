// GraphQL (contract/graphql/schema.graphql, contract/README.md "GraphQL"):
// graphql-js executes, graphql-http (the GraphQL-over-HTTP reference
// server) reads the request and shapes the response, behind fastify on its
// own HTTP/1.1 listener (`graphql`), with the REST listener's limits (body
// size, read and idle timeouts, TLS).
//
// Every root field is one call of the contract (validate, injected service
// time, failure draw: Service.invoke), so a request with several root fields
// costs what the REST calls it replaces cost. The schema is the contract's
// SDL read in place (buildSchema); fields resolve from the same native
// objects the other protocols serialize (graphql-js' default resolvers
// read their properties).
//
// The same handler serves `graphql-get` on its own listener: GET
// /graphql?operationName&variables&extensions, Apollo's automatic persisted
// queries (APQ): a document registered with its SHA-256 (by POST, or by GET
// with `query`) is then run by its hash alone; the bounded store is
// src/apq.js, in front of graphql-http's executor (which has no APQ). A GET
// with `query` and no hash runs too (GraphQL-over-HTTP's GET); a mutation by
// GET is 405 (graphql-http's own check).
//
// Untrusted input: fastify's body limit (413) and JSON parser (400, 415),
// a body that is not a GraphQL request 400 with the contract's JSON error,
// and a document deeper than MAX_DEPTH or selecting more than
// MAX_COMPLEXITY fields is refused before it runs, as in the Rust server.
import fs from 'node:fs';
import path from 'node:path';
import Fastify from 'fastify';
import { buildSchema, getOperationAST, GraphQLError, Kind, parse, print, __InputValue } from 'graphql';
import { createHandler } from 'graphql-http';
import { repoRoot } from './config.js';
import { documents, registerDocument, sha256Hex } from './apq.js';
import { ApiError } from './errors.js';
import { fastifyServerOptions, limitFastify, restErrorHandler, errorBody } from './rest.js';

export const MAX_DEPTH = 16;
export const MAX_COMPLEXITY = 256;
const GRAPHQL_PATH = '/graphql';
const INT64 = /^-?\d{1,19}$/;

const CODE_OF_KIND = { invalid: 'INVALID_ARGUMENT', notfound: 'NOT_FOUND', injected: 'INJECTED_FAILURE' };

function int64(value) {
  const s = typeof value === 'number' && Number.isSafeInteger(value) ? String(value) : value;
  if (typeof s === 'string' && INT64.test(s)) {
    const b = BigInt(s);
    if (b >= -(1n << 63n) && b < (1n << 63n)) return b.toString();
  }
  throw new GraphQLError(`expected a 64-bit integer, found ${JSON.stringify(value)}`);
}

// The contract's scalars on the SDL's scalar types.
function defineScalars(schema) {
  Object.assign(schema.getType('Int64'), {
    serialize: (v) => String(v),
    parseValue: int64,
    parseLiteral: (ast) => int64(ast.kind === Kind.INT || ast.kind === Kind.STRING ? ast.value : null),
  });
  const base64 = (v) => {
    if (typeof v !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(v) || v.length % 4 !== 0) {
      throw new GraphQLError(`expected base64 bytes, found ${JSON.stringify(v)}`);
    }
    return Buffer.from(v, 'base64');
  };
  Object.assign(schema.getType('Bytes'), {
    serialize: (v) => Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64'),
    parseValue: base64,
    parseLiteral: (ast) => base64(ast.kind === Kind.STRING ? ast.value : null),
  });
  const empty = (v) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v) || Object.keys(v).length > 0) {
      throw new GraphQLError(`expected {}, found ${JSON.stringify(v)}`);
    }
    return {};
  };
  Object.assign(schema.getType('Empty'), {
    serialize: () => ({}),
    parseValue: empty,
    parseLiteral: (ast) => empty(ast.kind === Kind.OBJECT && ast.fields.length === 0 ? {} : null),
  });
}

// The deepest selection and the number of fields an operation selects
// (fragments expanded where they are spread).
function measure(selectionSet, fragments, depth, seen) {
  let deepest = depth;
  let fields = 0;
  for (const sel of selectionSet.selections) {
    let sub = null;
    let d = depth;
    if (sel.kind === Kind.FIELD) {
      fields++;
      d = depth + 1;
      sub = sel.selectionSet;
    } else if (sel.kind === Kind.INLINE_FRAGMENT) {
      sub = sel.selectionSet;
    } else if (sel.kind === Kind.FRAGMENT_SPREAD) {
      const f = fragments.get(sel.name.value);
      if (!f || seen.has(f)) continue; // unknown or cyclic: other rules report it
      seen.add(f);
      const m = measure(f.selectionSet, fragments, depth, seen);
      seen.delete(f);
      deepest = Math.max(deepest, m.deepest);
      fields += m.fields;
      continue;
    }
    if (sub) {
      const m = measure(sub, fragments, d, seen);
      deepest = Math.max(deepest, m.deepest);
      fields += m.fields;
    } else {
      deepest = Math.max(deepest, d);
    }
  }
  return { deepest, fields };
}

// A validation rule: an operation nested deeper than MAX_DEPTH or selecting
// more than MAX_COMPLEXITY fields is an error.
function limitRule(context) {
  const doc = context.getDocument();
  const fragments = new Map(doc.definitions.filter((d) => d.kind === Kind.FRAGMENT_DEFINITION).map((d) => [d.name.value, d]));
  return {
    OperationDefinition(op) {
      const { deepest, fields } = measure(op.selectionSet, fragments, 0, new Set());
      if (deepest > MAX_DEPTH) context.reportError(new GraphQLError(`the query is nested ${deepest} deep, more than the limit of ${MAX_DEPTH}`, { nodes: [op] }));
      if (fields > MAX_COMPLEXITY) context.reportError(new GraphQLError(`the query selects ${fields} fields, more than the limit of ${MAX_COMPLEXITY}`, { nodes: [op] }));
    },
  };
}

// HelloInput -> the native helloworld.Hello (c1 / c2 are the oneof).
function helloOf(h) {
  if (h === null || h === undefined) return undefined;
  if (h.c1 != null && h.c2 != null) throw new ApiError('invalid', 'request: at most one of c1 and c2 (the oneof choice) may be set');
  if (!Number.isFinite(Math.fround(h.f))) throw new ApiError('invalid', `request.f is ${h.f}, not a finite number in float's range`);
  const out = { name: h.name, d: h.d, f: h.f, b: h.b, n: h.n, l: h.l, pets: h.pets.map((p) => ({ name: p.name, color: p.color })) };
  if (h.c1 != null) out.c1 = h.c1;
  if (h.c2 != null) out.c2 = h.c2;
  return out;
}

function rootValue(service) {
  const call = async (op, req) => {
    try {
      return await service.invoke(op, req);
    } catch (e) {
      if (e instanceof ApiError) throw new GraphQLError(e.message, { extensions: { code: CODE_OF_KIND[e.kind] } });
      throw e;
    }
  };
  const product = ({ input: p }) => ({ id: p.id, name: p.name, description: p.description, price: p.price, stock: p.stock, tags: p.tags });
  return {
    inventoryXs: () => call('GetInventoryXs', {}),
    inventoryS: () => call('GetInventoryS', {}),
    inventoryM: () => call('GetInventoryM', {}),
    inventoryL: () => call('GetInventoryL', {}),
    integer: () => call('GetInteger', {}),
    integers: () => call('GetIntegers', {}),
    objects: () => call('GetObjects', {}),
    file: ({ name }) => call('GetFile', { name }),
    echoProduct: (args) => call('EchoProduct', product(args)),
    modifyProduct: (args) => call('ModifyProduct', product(args)),
    cloneText: ({ input }) => call('CloneText', { text: input.text, times: input.times }),
    echo: ({ input }) => call('Echo', { payload: input.payload }),
    sayHello: async ({ input }) => {
      let request;
      try {
        request = helloOf(input.request);
      } catch (e) {
        throw new GraphQLError(e.message, { extensions: { code: CODE_OF_KIND[e.kind] } });
      }
      return call('SayHello', request === undefined ? {} : { request });
    },
  };
}

// An error no resolver meant (a bug) is reported without its text.
function formatError(err) {
  if (err instanceof GraphQLError && err.originalError && !(err.originalError instanceof GraphQLError)) {
    return new GraphQLError('internal error', { nodes: err.nodes, path: err.path });
  }
  return err;
}

// Introspection shows an input's default as the SDL writes it (`0.0`),
// where graphql-js would print it from the coerced value (`0`): the same
// value, but a client comparing the served schema with the contract's text
// (contract/tests/gql_check.py) sees the contract's literal.
function defaultsAsWritten() {
  const field = __InputValue.getFields().defaultValue;
  const printValue = field.resolve;
  field.resolve = (inputValue, ...rest) => (inputValue.astNode?.defaultValue ? print(inputValue.astNode.defaultValue) : printValue(inputValue, ...rest));
}

const NOT_FOUND_BODY = '{"errors":[{"message":"PersistedQueryNotFound","extensions":{"code":"PERSISTED_QUERY_NOT_FOUND"}}]}';
const SHA256_HEX = /^[0-9a-fA-F]{64}$/;
const GET_PARAMS = ['query', 'operationName', 'variables', 'extensions'];

// An APQ refusal: the status and a GraphQL-style {"errors":[{"message"}]}.
class Refusal {
  constructor(status, message) {
    this.status = status;
    this.body = JSON.stringify({ errors: [{ message }] });
  }
}

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

// The hash of extensions.persistedQuery, null when the request is not a
// persisted query, or a Refusal.
function persistedHash(extensions) {
  if (extensions === undefined || extensions === null) return null;
  if (!isObject(extensions)) return new Refusal(400, `extensions must be a JSON object, got ${JSON.stringify(extensions).slice(0, 100)}`);
  const pq = extensions.persistedQuery;
  if (pq === undefined) return null;
  if (!isObject(pq)) return new Refusal(400, 'extensions.persistedQuery must be a JSON object {"version":1,"sha256Hash":"<64 hex digits>"}');
  if (pq.version !== 1) return new Refusal(400, `extensions.persistedQuery.version is ${JSON.stringify(pq.version) ?? 'missing'}; only version 1 is supported`);
  if (typeof pq.sha256Hash !== 'string' || !SHA256_HEX.test(pq.sha256Hash)) {
    return new Refusal(400, `extensions.persistedQuery.sha256Hash must be 64 hex digits (the SHA-256 of the document), got ${(JSON.stringify(pq.sha256Hash) ?? 'nothing').slice(0, 100)}`);
  }
  return pq.sha256Hash.toLowerCase();
}

// The query-string parameters of a GET, JSON ones decoded; or a Refusal.
function getParams(url) {
  const q = url.indexOf('?');
  const search = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
  const out = {};
  for (const name of GET_PARAMS) {
    const all = search.getAll(name);
    if (all.length > 1) return new Refusal(400, `the ${name} parameter is given ${all.length} times, expected at most once`);
    if (all.length === 0 || all[0] === '') continue; // absent (an empty one too)
    if (name === 'query' || name === 'operationName') {
      out[name] = all[0];
      continue;
    }
    try {
      out[name] = JSON.parse(all[0]);
    } catch (e) {
      return new Refusal(400, `the ${name} parameter is not JSON (${e.message}); expected a JSON object`);
    }
  }
  return out;
}

// Resolves a request's parameters against the persisted documents:
// {params} to execute (query, operationName, variables) or a Refusal.
// A document given with its hash is checked and registered first.
async function resolvePersisted({ query, operationName, variables, extensions }, method) {
  const hash = persistedHash(extensions);
  if (hash instanceof Refusal) return hash;
  if (variables !== undefined && variables !== null && !isObject(variables)) return new Refusal(400, `variables must be a JSON object, got ${JSON.stringify(variables).slice(0, 100)}`);
  if (operationName !== undefined && operationName !== null && typeof operationName !== 'string') return new Refusal(400, 'operationName must be a string');
  if (query !== undefined && query !== null && typeof query !== 'string') return new Refusal(400, 'query must be a string (the GraphQL document)');
  const params = { operationName: operationName ?? undefined, variables: variables ?? undefined };
  if (hash === null) {
    if (typeof query !== 'string') return new Refusal(400, `a ${method} of ${GRAPHQL_PATH} needs extensions.persistedQuery.sha256Hash (a persisted query) or a query`);
    return { params: { ...params, query } };
  }
  if (typeof query !== 'string') {
    const stored = documents.get(hash);
    if (stored === undefined) return { notFound: true };
    return { params: { ...params, query: stored } };
  }
  if (sha256Hex(query) !== hash) return new Refusal(400, 'provided sha does not match query');
  await register(hash, query, method, params.operationName);
  return { params: { ...params, query } };
}

// Stores a registered document unless it cannot run here: one that does not
// parse (the executor reports the syntax error) or a mutation sent by GET
// (refused with 405).
async function register(hash, query, method, operationName) {
  if (documents.has(hash)) return;
  let doc;
  try {
    doc = parse(query);
  } catch {
    return;
  }
  if (method === 'GET' && getOperationAST(doc, operationName)?.operation === 'mutation') return;
  await registerDocument(hash, query);
}

// The GraphQL handler, built once per process and served by the `graphql`
// and `graphql-get` listeners alike (one schema, executor and document
// store).
export function graphqlHandler(_config, _model, service) {
  defaultsAsWritten();
  const sdl = fs.readFileSync(path.join(repoRoot, 'contract', 'graphql', 'schema.graphql'), 'utf8');
  const schema = buildSchema(sdl);
  defineScalars(schema);
  return createHandler({
    schema,
    rootValue: rootValue(service),
    validationRules: [limitRule],
    formatError,
    // parameters already resolved (a persisted query, a GET) come with the
    // request; otherwise graphql-http reads the POST body itself
    parseRequestParams: (req) => req.context?.params,
  });
}

// Runs one request through graphql-http and writes the contract's answer.
// `params` (resolved by resolvePersisted) or null: graphql-http reads the
// POST body.
async function execute(handler, request, reply, method, params) {
  // The contract's answer is application/json, GraphQL errors with 200.
  const headers = { ...request.headers, accept: 'application/json' };
  const [body, init] = await handler({
    method, url: request.url, headers, body: request.body ?? null, raw: request.raw, context: params ? { params } : null,
  });
  if (init.status === 200) {
    // A request refused before it runs (syntax, validation) has no data;
    // the contract's errors always carry "data": null.
    const out = body.startsWith('{"errors"') && !body.includes('"data":') ? `${body.slice(0, -1)},"data":null}` : body;
    return reply.code(200).type('application/json').send(out);
  }
  if (init.status === 405) {
    // a mutation by GET (GraphQL-over-HTTP: mutations only over POST)
    reply.header('allow', 'POST');
    return reply.code(405).type('application/json').send(body);
  }
  let why = '';
  try {
    why = JSON.parse(body).errors[0].message;
  } catch { /* no body */ }
  return errorBody(reply, 400, `the body is not a GraphQL request ({"query", "operationName", "variables"})${why ? `: ${why}` : ''}`);
}

async function persisted(handler, request, reply, method, fields) {
  const r = await resolvePersisted(fields, method);
  if (r instanceof Refusal) return reply.code(r.status).type('application/json').send(r.body);
  if (r.notFound) return reply.code(200).type('application/json').send(NOT_FOUND_BODY);
  return execute(handler, request, reply, method, r.params);
}

// One GraphQL listener (`graphql` or `graphql-get`: the same routes) on
// fastify with the REST listener's limits.
export function buildGraphql(config, handler) {
  const app = limitFastify(Fastify(fastifyServerOptions(config, { http2: false })), config, { http2: false });
  app.removeContentTypeParser('text/plain');
  app.setErrorHandler(restErrorHandler);
  app.setNotFoundHandler((request, reply) => errorBody(reply, 404, `no operation at ${request.method} ${request.url.split('?')[0].slice(0, 100)}; GraphQL is served at GET and POST ${GRAPHQL_PATH}`));
  app.post(GRAPHQL_PATH, async (request, reply) => {
    const b = request.body;
    // APQ by POST (a registration, or a hash alone); any other body as before
    if (isObject(b) && isObject(b.extensions) && b.extensions.persistedQuery !== undefined) {
      return persisted(handler, request, reply, 'POST', b);
    }
    return execute(handler, request, reply, 'POST', null);
  });
  app.get(GRAPHQL_PATH, { exposeHeadRoute: false }, async (request, reply) => {
    const fields = getParams(request.url);
    if (fields instanceof Refusal) return reply.code(fields.status).type('application/json').send(fields.body);
    return persisted(handler, request, reply, 'GET', fields);
  });
  app.route({
    method: app.supportedMethods.filter((m) => m !== 'POST' && m !== 'GET'),
    url: GRAPHQL_PATH,
    onRequest: (request, reply) => {
      reply.header('allow', 'GET, POST');
      errorBody(reply, 405, `method ${request.method} is not allowed on ${GRAPHQL_PATH}; allowed: GET, POST`);
    },
    handler: () => {},
  });
  return app;
}
