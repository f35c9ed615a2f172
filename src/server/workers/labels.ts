import { ValidationFailedError } from '../common/app-error.js';
import type { ProblemFieldError } from '../../contracts/api/problem.js';

const KEY = /^[a-z0-9]([a-z0-9._/-]{0,61}[a-z0-9])?$/;
const MAX_LABELS = 32;

/** Labels are a flat map of short keys to short strings; anything else is a 422 naming the path. */
export function validateLabels(value: unknown, path: string): Record<string, string> {
  if (value === undefined || value === null) return {};
  const errors: ProblemFieldError[] = [];
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new ValidationFailedError([{ path, message: 'labels must be an object of strings' }]);
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > MAX_LABELS) errors.push({ path, message: `at most ${MAX_LABELS} labels` });
  for (const [key, v] of entries) {
    if (!KEY.test(key))
      errors.push({ path: `${path}.${key}`, message: 'label keys are 1-63 of a-z 0-9 . _ / -' });
    if (typeof v !== 'string' || v.length > 253)
      errors.push({ path: `${path}.${key}`, message: 'label values are strings of at most 253 characters' });
  }
  if (errors.length > 0) throw new ValidationFailedError(errors);
  return value as Record<string, string>;
}
