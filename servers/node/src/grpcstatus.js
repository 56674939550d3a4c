// gRPC statuses of the contract's error kinds (contract/README.md "gRPC
// status codes"), shared by the unary and the streaming services.
import grpc from '@grpc/grpc-js';
import { ApiError } from './errors.js';

const CODE_OF_KIND = {
  invalid: grpc.status.INVALID_ARGUMENT,
  notfound: grpc.status.NOT_FOUND,
  injected: grpc.status.UNAVAILABLE,
};

// What a wrapped deserializer returns for a message it cannot decode; the
// handler answers it with INVALID_ARGUMENT.
export class UndecodableRequest {
  constructor(message) { this.message = message; }
}

export function toStatus(err) {
  if (err instanceof ApiError) return { code: CODE_OF_KIND[err.kind], details: err.message };
  return { code: grpc.status.INTERNAL, details: 'internal error' };
}
