import {
  CallHandler,
  ExecutionContext,
  Injectable,
  NestInterceptor,
  SetMetadata,
  applyDecorators,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import type { Observable } from 'rxjs';
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
 * Refuses a request body whose Content-Type the handler does not declare with 415. Runs after the
 * guards, so an unauthenticated caller learns nothing about a route's media types.
 */
@Injectable()
export class MediaTypeInterceptor implements NestInterceptor {
  constructor(private readonly reflector: Reflector) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() === 'http') {
      const req = context.switchToHttp().getRequest<Request>();
      if (BODY_METHODS.has(req.method) && hasBody(req)) {
        const accepted = this.reflector.getAllAndOverride<string[] | undefined>(CONSUMES, [
          context.getHandler(),
          context.getClass(),
        ]) ?? ['application/json'];
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
    }
    return next.handle();
  }
}
