// gRPC streams: the handlers of protobench.v1.Streams on @grpc/grpc-js
// (bidirectional echo, server-streaming subscription, client-streaming
// upload, unary poll).
//
// Each call is admitted once, like a unary call: its request (for a
// subscription or a poll) is validated first, then the injected service
// time and the failure draw run before the first message, so an injected
// failure is UNAVAILABLE with no message sent. A reply is written only when
// the previous one has been handed to HTTP/2 (the write callback), and the
// next inbound message is read only after that (async iteration of the
// call), so a call holds one message per direction plus grpc-js' own
// readable buffer (its objectMode high-water mark of 16 messages). An
// inbound message over PROTOBENCH_MAX_REQUEST_BYTES ends the call with
// RESOURCE_EXHAUSTED (grpc-js' grpc.max_receive_message_length), one past
// 1,000,000 messages too.
import grpc from '@grpc/grpc-js';
import { UndecodableRequest, toStatus } from './grpcstatus.js';
import {
  Feed, Tally, MAX_STREAM_MESSAGES, TOO_MANY_MESSAGES, nowNs, pollPage, validateSubscribe, validatePoll,
} from './stream.js';

const tooMany = () => ({ code: grpc.status.RESOURCE_EXHAUSTED, details: TOO_MANY_MESSAGES });
const undecodable = (m) => ({ code: grpc.status.INVALID_ARGUMENT, details: m.message });

// Writes one message; resolves true once grpc-js has handed it on, false
// when the call has ended (cancelled by the client) first.
function writeOne(call, message) {
  if (call.cancelled || call.destroyed) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onCancel = () => resolve(false);
    call.once('cancelled', onCancel);
    call.write(message, (err) => {
      call.off('cancelled', onCancel);
      resolve(!err);
    });
  });
}

// Ends a streaming call with a non-OK status.
function fail(call, status) {
  if (!call.cancelled) call.emit('error', status);
}

export function streamHandlers(service) {
  const data = service.data;
  return {
    async EchoStream(call) {
      call.on('error', () => {});
      try {
        await service.admit();
      } catch (e) {
        return fail(call, toStatus(e));
      }
      // Response headers at once (grpc-js sends them lazily with the first
      // reply): a client may wait for them before it sends its messages.
      call.sendMetadata(new grpc.Metadata());
      let n = 0;
      try {
        // destroyOnReturn: false, or the iterator destroys the call when
        // the client half-closes, before its status is sent
        for await (const message of call.iterator({ destroyOnReturn: false })) {
          if (message instanceof UndecodableRequest) return fail(call, undecodable(message));
          if (n >= MAX_STREAM_MESSAGES) return fail(call, tooMany());
          n++;
          if (!(await writeOne(call, message))) return undefined;
        }
      } catch {
        return undefined; // the call was cancelled or failed in grpc-js
      }
      if (!call.cancelled) call.end();
      return undefined;
    },

    async Subscribe(call) {
      call.on('error', () => {});
      const request = call.request;
      if (request instanceof UndecodableRequest) return fail(call, undecodable(request));
      try {
        validateSubscribe(request);
        await service.admit();
      } catch (e) {
        return fail(call, toStatus(e));
      }
      const feed = new Feed(data, request);
      for (;;) {
        if (call.cancelled) return undefined;
        const event = await feed.nextEvent();
        if (event === null) break;
        if (!(await writeOne(call, event))) return undefined;
      }
      call.end();
      return undefined;
    },

    async Upload(call, callback) {
      call.on('error', () => {});
      try {
        await service.admit();
      } catch (e) {
        return callback(toStatus(e));
      }
      call.sendMetadata(new grpc.Metadata());
      const tally = new Tally();
      try {
        for await (const message of call) {
          if (message instanceof UndecodableRequest) return callback(undecodable(message));
          if (!tally.add(message)) return callback(tooMany());
        }
      } catch {
        return undefined; // the call was cancelled or failed in grpc-js
      }
      return callback(null, tally.summary());
    },

    async Poll(call, callback) {
      const request = call.request;
      if (request instanceof UndecodableRequest) return callback(undecodable(request));
      try {
        validatePoll(request);
        await service.admit();
        return callback(null, pollPage(data, request, nowNs()));
      } catch (e) {
        return callback(toStatus(e));
      }
    },
  };
}
