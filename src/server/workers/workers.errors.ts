import { AppError, ConflictError } from '../common/app-error.js';

export const invalidJoinToken = () =>
  new AppError(401, 'unauthorized', 'Unauthorized', 'The join token is invalid, expired or revoked.');
export const invalidEnrollmentSecret = () =>
  new AppError(401, 'unauthorized', 'Unauthorized', 'Unknown worker or wrong enrollment secret.');
export const notPending = (id: string) => new ConflictError(`Worker ${id} is not pending approval.`);
export const tooManyEnrollmentFailures = (retryAfter: number) =>
  new AppError(
    429,
    'rate_limited',
    'Too Many Requests',
    'Too many failed enrollment attempts; retry later.',
    undefined,
    {
      'Retry-After': String(retryAfter),
    },
  );
