// Protocol-independent error kinds; each protocol maps them onto its own
// statuses (contract/README.md: JSON errors, SOAP faults, gRPC status codes).
export class ApiError extends Error {
  constructor(kind, message) {
    super(message);
    this.kind = kind; // 'invalid' | 'notfound' | 'injected'
  }
}

export const invalid = (message) => new ApiError('invalid', message);
export const notFound = (message) => new ApiError('notfound', message);
export const injected = () => new ApiError('injected', 'injected failure');
