import { ExecutionContext, SetMetadata, applyDecorators } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { AppError } from './app-error.js';

export const CONSUMES = 'media-type:consumes';

/** Declares the media types a handler accepts for its body (default: application/json). */
export const Consumes = (...types: string[]) => applyDecorators(SetMetadata(CONSUMES, types));

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

const hasBody = (req: Request): boolean =>
  req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;

const matches = (actual: string, accepted: string): boolean => {
  if (accepted === actual) return true;
  // application/*+json style suffix wildcards.
  const [type, sub] = accepted.split('/');
  if (sub?.startsWith('*+')) return actual.startsWith(`${type}/`) && actual.endsWith(sub.slice(1));
  return false;
};

/**
 * Refuses a request body whose Content-Type the handler does not declare with 415. Called by the
 * global guard once access is decided (docs/benchmarks.md: a global interceptor puts every request
 * through Nest's rxjs interceptor chain), so an unauthenticated caller learns nothing about a
 * route's media types.
 */
export function checkMediaType(req: Request, accepted: readonly string[]): void {
  if (!BODY_METHODS.has(req.method) || !hasBody(req)) return;
  const actual = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (!accepted.some((type) => matches(actual, type))) {
    throw new AppError(
      415,
      'unsupported_media_type',
      'Unsupported Media Type',
      `This operation accepts ${accepted.join(', ')}${actual ? `, not ${actual}` : '; the request has no Content-Type'}.`,
    );
  }
}

/** The media types a handler declares for its body (`@Consumes`), application/json if none. */
export function consumedTypes(reflector: Reflector, context: ExecutionContext): string[] {
  return (
    reflector.getAllAndOverride<string[] | undefined>(CONSUMES, [
      context.getHandler(),
      context.getClass(),
    ]) ?? ['application/json']
  );
}
