// The streaming operations on the REST listeners (contract/README.md
// "Streaming", contract/asyncapi.yaml):
// - WebSocket (RFC 6455, `rest` only) with @fastify/websocket (the `ws`
//   library): /v1/stream/ws/echo, /v1/stream/ws/subscribe, /v1/stream/ws/upload.
//   A text frame carries a message's canonical JSON, a binary frame its
//   protobuf; a reply goes in the frame type of the message it answers.
//   The call is admitted (service time, failure draw) before the upgrade,
//   in a preHandler hook: an injected failure is the contract's HTTP 500.
//   Close codes: 1000 the clean end, 1007 a message that does not decode
//   or is invalid (and a text frame that is not UTF-8: ws), 1008 more than
//   1,000,000 messages or no message for PROTOBENCH_IDLE_TIMEOUT while one
//   is awaited, 1009 a message over PROTOBENCH_MAX_REQUEST_BYTES (ws'
//   maxPayload, checked from the frame header, before it is buffered).
//   WebSocket over HTTP/2 (RFC 8441) is not served: ws and
//   @fastify/websocket speak RFC 6455 over HTTP/1.1 only.
// - Server-Sent Events, GET /v1/stream/sse (`rest` and `rest-h2`).
// - Polling, GET /v1/stream/poll (`rest` and `rest-h2`).
import fastifyWebsocket from '@fastify/websocket';
import { loadPackageDefinition } from './grpc.js';
import { ApiError, invalid } from './errors.js';
import { addWireIndex } from './pbcheck.js';
import {
  Feed, Tally, TOO_MANY_MESSAGES, MAX_STREAM_MESSAGES, nowNs, pollFromUrl, pollPage, streamCodecs, subscribeFromUrl,
  validateSubscribe,
} from './stream.js';

export const WS_PATHS = { echo: '/v1/stream/ws/echo', subscribe: '/v1/stream/ws/subscribe', upload: '/v1/stream/ws/upload' };
export const SSE_PATH = '/v1/stream/sse';
export const POLL_PATH = '/v1/stream/poll';

const CLOSE_NORMAL = 1000;
const CLOSE_INVALID = 1007;
const CLOSE_POLICY = 1008;
// A close frame's reason holds at most 123 bytes.
const MAX_REASON = 123;

function closeWith(ws, code, reason) {
  let r = Buffer.from(reason, 'utf8');
  if (r.length > MAX_REASON) {
    let end = MAX_REASON;
    while (end > 0 && (r[end] & 0xc0) === 0x80) end--; // a UTF-8 boundary
    r = r.subarray(0, end);
  }
  realClose(ws, code, r);
}

// The client's messages, one at a time: the socket is paused while a
// message waits to be handled (ws may still deliver what it has already
// read from the socket; those wait here in order, a bounded amount).
//
// ws answers a client's close frame as soon as its parser reaches it, which
// can be before the messages that came ahead of it have been handled (their
// echoes could then no longer be sent). So the Inbox holds that answer back
// (it intercepts ws' call of close() on this socket) until the handler has
// taken every earlier message and asks for the next one.
class Inbox {
  constructor(ws, idleMs) {
    this.ws = ws;
    this.idleMs = idleMs;
    this.queue = [];
    this.gone = false;
    this.waiting = false;
    this.wake = null;
    this.deferredClose = null;
    ws.close = (code, reason) => {
      if (this.waiting && this.queue.length === 0) realClose(ws, code, reason);
      else this.deferredClose ??= [code, reason];
    };
    ws.on('message', (data, isBinary) => {
      this.queue.push({ data, isBinary });
      ws.pause();
      this.notify();
    });
    ws.on('close', () => {
      this.gone = true;
      this.notify();
    });
  }

  // Stops holding back the answer to a close frame (the subscription
  // takes one message only).
  release() {
    delete this.ws.close;
    if (this.deferredClose) realClose(this.ws, ...this.deferredClose);
  }

  notify() {
    const w = this.wake;
    this.wake = null;
    if (w) w();
  }

  // The next message {data, isBinary}, or {gone: true} when the client
  // closed or left, or {idle: true} after idleMs with none.
  async next() {
    if (this.queue.length === 0) {
      if (this.deferredClose) {
        realClose(this.ws, ...this.deferredClose);
        this.deferredClose = null;
      }
      if (this.gone || this.ws.readyState !== this.ws.OPEN) return { gone: true };
      this.ws.resume();
      let timer;
      this.waiting = true;
      const idle = await new Promise((resolve) => {
        this.wake = () => resolve(false);
        timer = setTimeout(() => resolve(true), this.idleMs);
      });
      this.waiting = false;
      clearTimeout(timer);
      this.wake = null;
      if (this.queue.length === 0) return idle && !this.gone && this.ws.readyState === this.ws.OPEN ? { idle: true } : { gone: true };
    }
    return this.queue.shift();
  }
}

// ws' own close(), past an Inbox's interception. The socket is resumed
// (an Inbox pauses it) so that the client's answer to the close is read.
function realClose(ws, code, reason) {
  ws.resume();
  Object.getPrototypeOf(ws).close.call(ws, code, reason);
}

// Sends one message in the frame type of the one it answers; resolves
// false when the connection is gone.
function sendOne(ws, codec, obj, isBinary) {
  if (ws.readyState !== ws.OPEN) return Promise.resolve(false);
  const payload = isBinary ? codec.encodePb(obj) : codec.encodeJson(obj);
  return new Promise((resolve) => ws.send(payload, { binary: isBinary }, (err) => resolve(!err)));
}

function decode(codec, { data, isBinary }) {
  return isBinary ? codec.decodePb(data) : codec.decodeJson(data);
}

// Handles the end of awaiting a message: true when the stream must stop.
function ended(ws, m, idleMs) {
  if (m.gone) return true;
  if (m.idle) {
    closeWith(ws, CLOSE_POLICY, `no message for ${idleMs} ms`);
    return true;
  }
  return false;
}

function wsHandlers(codecs, data, idleMs) {
  const { StreamMessage, SubscribeRequest, FeedEvent, UploadSummary } = codecs;
  return {
    async echo(ws) {
      const inbox = new Inbox(ws, idleMs);
      let n = 0;
      for (;;) {
        const m = await inbox.next();
        if (ended(ws, m, idleMs)) return;
        if (n >= MAX_STREAM_MESSAGES) return closeWith(ws, CLOSE_POLICY, TOO_MANY_MESSAGES);
        n++;
        let message;
        try {
          message = decode(StreamMessage, m);
        } catch (e) {
          return closeWith(ws, CLOSE_INVALID, e.message);
        }
        if (!(await sendOne(ws, StreamMessage, message, m.isBinary))) return;
      }
    },

    async subscribe(ws) {
      const inbox = new Inbox(ws, idleMs);
      const m = await inbox.next();
      if (ended(ws, m, idleMs)) return;
      let request;
      try {
        request = decode(SubscribeRequest, m);
        validateSubscribe(request);
      } catch (e) {
        return closeWith(ws, CLOSE_INVALID, e.message);
      }
      // The client may only close during a subscription.
      if (inbox.queue.length > 0) return closeWith(ws, CLOSE_INVALID, 'no message is expected during a subscription');
      inbox.release();
      let stop = false;
      ws.removeAllListeners('message');
      ws.on('message', () => {
        stop = true;
        closeWith(ws, CLOSE_INVALID, 'no message is expected during a subscription');
      });
      ws.on('close', () => { stop = true; });
      ws.resume();
      const feed = new Feed(data, request);
      for (;;) {
        if (stop) return;
        const event = await feed.nextEvent();
        if (event === null) break;
        if (stop || !(await sendOne(ws, FeedEvent, event, m.isBinary))) return;
      }
      closeWith(ws, CLOSE_NORMAL, '');
    },

    async upload(ws) {
      const inbox = new Inbox(ws, idleMs);
      const tally = new Tally();
      for (;;) {
        const m = await inbox.next();
        if (ended(ws, m, idleMs)) return;
        // An empty frame ends the upload (no message encodes to nothing: seq >= 1).
        if (m.data.length === 0) {
          if (await sendOne(ws, UploadSummary, tally.summary(), m.isBinary)) closeWith(ws, CLOSE_NORMAL, '');
          return;
        }
        let message;
        try {
          message = decode(StreamMessage, m);
        } catch (e) {
          return closeWith(ws, CLOSE_INVALID, e.message);
        }
        if (!tally.add(message)) return closeWith(ws, CLOSE_POLICY, TOO_MANY_MESSAGES);
      }
    },
  };
}

// Writes the feed as Server-Sent Events on the raw response (HTTP/1.1 or
// HTTP/2), one event at a time: the next is built when the previous one
// has been written (after 'drain' when the socket's buffer is full).
async function writeSse(raw, feed) {
  let gone = false;
  raw.on('close', () => { gone = true; });
  const write = (chunk) => new Promise((resolve) => {
    if (raw.write(chunk)) resolve();
    else {
      const done = () => { raw.off('drain', done); raw.off('close', done); resolve(); };
      raw.on('drain', done);
      raw.on('close', done);
    }
  });
  for (;;) {
    if (gone) return;
    const event = await feed.nextEvent();
    if (gone) return;
    if (event === null) break;
    await write(`id: ${event.seq}\nevent: feed\ndata: ${JSON.stringify(event)}\n\n`);
  }
  raw.end(`event: end\ndata: {"count":${feed.count}}\n\n`);
}

function lastEventId(request, count) {
  const h = request.headers['last-event-id'];
  if (h === undefined) return 0;
  const s = String(h).trim();
  const n = /^\d{1,10}$/.test(s) ? Number(s) : NaN;
  if (!(n <= count)) throw invalid(`Last-Event-ID is not an event of this feed; expected 0..=${count}`);
  return n;
}

// Registers the streaming routes on a REST fastify app; `errorBody` is the
// contract's JSON error, `methodNotAllowed(url, allow)` its 405 route.
export function registerStreams(app, config, model, service, { http2, errorBody, methodNotAllowed }) {
  const data = service.data;
  // A WebSocket call is admitted before the upgrade.
  const admitUpgrade = async (request, reply) => {
    if (!request.ws) return undefined;
    try {
      await service.admit();
    } catch (e) {
      if (e instanceof ApiError) return errorBody(reply, 500, e.message);
      throw e;
    }
    return undefined;
  };

  if (!http2) {
    addWireIndex(model);
    const codecs = streamCodecs(model, loadPackageDefinition());
    const handlers = wsHandlers(codecs, data, config.idleTimeoutMs);
    app.register(fastifyWebsocket, {
      options: { maxPayload: config.maxRequestBytes, perMessageDeflate: false },
      // ws reports a protocol error (oversized or non-UTF-8 message) after
      // it has sent its close frame (1009, 1007): let that close finish.
      errorHandler: (err, socket) => { if (!String(err && err.code).startsWith('WS_ERR_')) socket.terminate(); },
      // on shutdown, streams in flight may finish (server.js bounds the wait)
      preClose: (done) => done(),
    });
    app.register(async (scope) => {
      for (const [name, url] of Object.entries(WS_PATHS)) {
        scope.route({
          method: 'GET',
          url,
          preHandler: admitUpgrade,
          handler: (_request, reply) => errorBody(reply, 426, `${url} is a WebSocket endpoint: expected a WebSocket upgrade (GET with Upgrade: websocket)`),
          wsHandler: handlers[name],
        });
        methodNotAllowed(url, 'GET, HEAD');
      }
    });
  }

  app.get(SSE_PATH, async (request, reply) => {
    let req;
    let after;
    try {
      req = subscribeFromUrl(request.raw.url);
      after = lastEventId(request, req.count);
      await service.admit();
    } catch (e) {
      if (e instanceof ApiError) return errorBody(reply, e.kind === 'injected' ? 500 : 400, e.message);
      throw e;
    }
    const head = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' };
    // HEAD: the headers only (no feed runs for a response without a body)
    if (request.method === 'HEAD') return reply.code(200).headers(head).send();
    const feed = new Feed(data, req, after);
    reply.hijack();
    reply.raw.writeHead(200, head);
    await writeSse(reply.raw, feed);
    return undefined;
  });
  methodNotAllowed(SSE_PATH, 'GET, HEAD');

  app.get(POLL_PATH, async (request, reply) => {
    try {
      const req = pollFromUrl(request.raw.url);
      await service.admit();
      const page = pollPage(data, req, nowNs());
      return reply.type('application/json').send(JSON.stringify(page));
    } catch (e) {
      if (e instanceof ApiError) return errorBody(reply, e.kind === 'injected' ? 500 : 400, e.message);
      throw e;
    }
  });
  methodNotAllowed(POLL_PATH, 'GET, HEAD');
}
