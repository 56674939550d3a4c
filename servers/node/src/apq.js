// Automatic persisted queries (Apollo's APQ form; contract `graphql-get`):
// the bounded store of registered documents, keyed by the lowercase hex
// SHA-256 of the text exactly as the client sent it. graphql-http has no
// APQ, so src/graphql.js puts this store in front of its executor.
//
// Bound: at most MAX_DOCUMENTS documents and MAX_STORED_CHARS characters in
// all (an untrusted client must not grow memory without limit; one document
// is already bounded by the request-size limit). When full, the OLDEST
// registration is evicted (first in, first out; a lookup does not refresh a
// document). Oldest-first keeps every cluster worker's store the same: each
// applies the same registrations in the same order (below).
//
// With node:cluster (PROTOBENCH_WORKERS > 1) each worker has its own store,
// and a client's next connection may land on another worker. A worker that
// registers a document therefore asks the primary, which hands it to every
// worker and answers the registering one only when all have stored it: the
// registration's response is sent after every worker knows the hash, so a
// GET that follows it finds it wherever it lands. A worker started later
// (a replacement) gets the primary's copy of the store first.
import crypto from 'node:crypto';
import cluster from 'node:cluster';

export const MAX_DOCUMENTS = 1000;
export const MAX_STORED_CHARS = 32 * 1024 * 1024;
// A registering worker waits at most this long for the primary's answer
// (a worker stuck in a long request delays it), then stores on its own.
const RELAY_TIMEOUT_MS = 10000;

export function sha256Hex(text) {
  return crypto.createHash('sha256').update(text, 'utf8').digest('hex');
}

export class DocumentStore {
  #docs = new Map(); // insertion order = registration order
  #chars = 0;

  constructor({ maxDocuments = MAX_DOCUMENTS, maxChars = MAX_STORED_CHARS } = {}) {
    this.maxDocuments = maxDocuments;
    this.maxChars = maxChars;
  }

  get size() { return this.#docs.size; }

  has(hash) { return this.#docs.has(hash); }

  get(hash) { return this.#docs.get(hash); }

  // Stores a document unless its hash is known, evicting the oldest first
  // while the store is full.
  put(hash, query) {
    if (this.#docs.has(hash)) return;
    while (this.#docs.size > 0 && (this.#docs.size >= this.maxDocuments || this.#chars + query.length > this.maxChars)) {
      const [oldest, text] = this.#docs.entries().next().value;
      this.#docs.delete(oldest);
      this.#chars -= text.length;
    }
    this.#docs.set(hash, query);
    this.#chars += query.length;
  }

  list() { return [...this.#docs]; }
}

// This process's store: both GraphQL listeners use it.
export const documents = new DocumentStore();

const waiting = new Map(); // registration id -> settle()
let nextRegistration = 0;

// Stores a document here, and with node:cluster in every worker; resolves
// when it is stored everywhere (or the primary did not answer in time).
export function registerDocument(hash, query) {
  if (documents.has(hash)) return Promise.resolve();
  if (!cluster.isWorker || !process.connected) {
    documents.put(hash, query);
    return Promise.resolve();
  }
  return new Promise((resolve) => {
    const id = ++nextRegistration;
    const settle = () => {
      clearTimeout(timer);
      waiting.delete(id);
      documents.put(hash, query); // a no-op when the primary's copy came first
      resolve();
    };
    const timer = setTimeout(settle, RELAY_TIMEOUT_MS);
    waiting.set(id, settle);
    try {
      process.send({ type: 'apq-register', id, hash, query });
    } catch {
      settle();
    }
  });
}

// In a worker: handles the primary's APQ messages; false for any other.
export function onPrimaryMessage(msg) {
  switch (msg?.type) {
    case 'apq-store':
      documents.put(msg.hash, msg.query);
      process.send({ type: 'apq-stored', ack: msg.ack });
      return true;
    case 'apq-sync':
      for (const [hash, query] of msg.docs) documents.put(hash, query);
      return true;
    case 'apq-registered':
      waiting.get(msg.id)?.();
      return true;
    default:
      return false;
  }
}

// In a worker, once onPrimaryMessage is listening: from now on the primary
// includes this worker in every registration.
export function announceWorker() {
  process.send({ type: 'apq-ready' });
}

function sendTo(worker, msg) {
  try {
    if (worker.isConnected()) worker.send(msg);
  } catch { /* the worker is gone; its exit is handled */ }
}

// In the cluster primary: relays registrations to every ready worker.
// Returns {onMessage(worker, msg) -> handled?, onExit(worker)}.
export function primaryRelay() {
  const copy = new DocumentStore();
  const ready = new Map(); // worker id -> worker
  const acks = new Map(); // ack id -> {origin, id, pending: Set of worker ids}
  let nextAck = 0;
  const check = (ack) => {
    const a = acks.get(ack);
    if (!a || a.pending.size > 0) return;
    acks.delete(ack);
    sendTo(a.origin, { type: 'apq-registered', id: a.id });
  };
  return {
    onMessage(worker, msg) {
      switch (msg?.type) {
        case 'apq-ready':
          sendTo(worker, { type: 'apq-sync', docs: copy.list() });
          ready.set(worker.id, worker);
          return true;
        case 'apq-register': {
          if (typeof msg.hash !== 'string' || typeof msg.query !== 'string') return true;
          copy.put(msg.hash, msg.query);
          const ack = ++nextAck;
          acks.set(ack, { origin: worker, id: msg.id, pending: new Set(ready.keys()) });
          for (const w of ready.values()) sendTo(w, { type: 'apq-store', hash: msg.hash, query: msg.query, ack });
          check(ack);
          return true;
        }
        case 'apq-stored':
          acks.get(msg.ack)?.pending.delete(worker.id);
          check(msg.ack);
          return true;
        default:
          return false;
      }
    },
    onExit(worker) {
      ready.delete(worker.id);
      for (const [ack, a] of acks) {
        a.pending.delete(worker.id);
        check(ack);
      }
    },
  };
}
