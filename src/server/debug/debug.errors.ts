import { AppError } from '../common/app-error.js';

export const bundleInProgress = (retryAfterSeconds: number) =>
  new AppError(
    429,
    'rate_limited',
    'Too Many Requests',
    'A debug bundle is being made on this replica; it makes one at a time. Retry when it is done.',
    undefined,
    { 'Retry-After': String(retryAfterSeconds) },
  );
