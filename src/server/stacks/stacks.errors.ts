import { AppError, ConflictError, NotFoundError, ValidationFailedError } from '../common/app-error.js';

export const stackNotFound = (id: string) => new NotFoundError(`No stack ${id}.`);
export const stackNameTaken = (name: string) => new ConflictError(`A stack named ${name} already exists.`);
export const stackRenamed = (name: string) =>
  new ValidationFailedError(
    [
      {
        path: 'name',
        category: 'invalid_value',
        message: `the stack is named ${name}; a new revision cannot rename it`,
      },
    ],
    'The stack definition has 1 error.',
  );
export const replaceRaced = () =>
  new ConflictError('Another revision of the stack was saved at the same time; read it and try again.');
export const stackBeingDestroyed = (id: string) =>
  new AppError(409, 'conflict', 'Conflict', `Stack ${id} is being destroyed.`);
export const revisionNotFound = (id: string, revision: number) =>
  new NotFoundError(`Stack ${id} has no revision ${revision}.`);

export const stackVolumesLost = (id: string, services: string[]) =>
  new ConflictError(
    `Stack ${id} ran with volumes (services ${services.join(', ')}) on a worker that has since been deleted, and its data went with it; a deploy would start them empty on another worker. Destroy the stack and create it again to start empty, or bring the worker back.`,
  );
