import { status as GrpcStatus } from '@grpc/grpc-js';
import { AppError, ValidationFailedError } from '../common/app-error.js';

export const invalidCsr = (message: string): AppError =>
  new ValidationFailedError([{ path: 'csr', message }]);

export const renewalsExhausted = (retryAfterSeconds: number): AppError =>
  new AppError(
    429,
    'rate_limited',
    'Too Many Requests',
    `too many certificate renewals for this worker; try again in ${retryAfterSeconds} s`,
  );

/** The same coded errors the HTTP API answers, as gRPC status codes. */
export function grpcStatusFor(err: unknown): GrpcStatus {
  if (!(err instanceof AppError)) return GrpcStatus.INTERNAL;
  switch (err.status) {
    case 400:
    case 422:
      return GrpcStatus.INVALID_ARGUMENT;
    case 401:
      return GrpcStatus.UNAUTHENTICATED;
    case 403:
      return GrpcStatus.PERMISSION_DENIED;
    case 404:
      return GrpcStatus.NOT_FOUND;
    case 409:
      return GrpcStatus.FAILED_PRECONDITION;
    case 429:
      return GrpcStatus.RESOURCE_EXHAUSTED;
    case 503:
      return GrpcStatus.UNAVAILABLE;
    default:
      return GrpcStatus.INTERNAL;
  }
}
