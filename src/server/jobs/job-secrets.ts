import type { ServiceSpecMsg } from '../../contracts/agent-protocol/index.js';

/**
 * A file of a job's service whose content is a secret (a monitoring client's secret): the job's
 * stored payload holds it sealed (SecretBox), the dispatcher opens it into the command it sends,
 * so the jobs table never holds it in the clear.
 */
export interface SealedFile {
  service: string;
  path: string;
  sealed: string;
}

/** The SecretBox context a sealed file is bound to: it cannot be moved to another stack or file. */
export const sealedFileContext = (stackId: string, service: string, path: string): string =>
  `job-file:${stackId}:${service}:${path}`;

/**
 * The services with each sealed file's content filled in by `open` (which throws when it cannot).
 * A sealed file the services do not have is ignored; the services themselves are not changed.
 */
export function openSealedFiles(
  stackId: string,
  services: ServiceSpecMsg[],
  sealed: readonly SealedFile[],
  open: (sealed: string, context: string) => string,
): ServiceSpecMsg[] {
  if (sealed.length === 0) return services;
  return services.map((service) => {
    const mine = sealed.filter((s) => s.service === service.name);
    if (mine.length === 0 || !service.files) return service;
    return {
      ...service,
      files: service.files.map((f) => {
        const entry = mine.find((s) => s.path === f.path);
        return entry
          ? { ...f, content: open(entry.sealed, sealedFileContext(stackId, service.name, f.path)) }
          : f;
      }),
    };
  });
}
