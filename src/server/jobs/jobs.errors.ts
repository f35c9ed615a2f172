import { ConflictError, NotFoundError } from '../common/app-error.js';

export const jobNotFound = (id: string) => new NotFoundError(`No job ${id}.`);
export const jobFinished = (id: string, status: string) =>
  new ConflictError(`Job ${id} is already ${status}; there is nothing to cancel.`);
export const nothingToCleanUp = (id: string) =>
  new ConflictError(`Job ${id} succeeded; there is nothing to clean up.`);
export const stackBusy = (stackId: string) =>
  new ConflictError(`Stack ${stackId} already has an unfinished job; cancel it or wait.`);
