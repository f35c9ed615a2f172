import { Logger } from 'nestjs-pino';

/**
 * Nest's own start-up chatter: one line per module, controller and route. Useful when a route is
 * missing, noise on every other start: these contexts log at debug instead of info.
 */
export const NEST_STARTUP_CONTEXTS: ReadonlySet<string> = new Set([
  'NestFactory',
  'InstanceLoader',
  'RoutesResolver',
  'RouterExplorer',
  'NestApplication',
]);

/** The logger Nest itself writes through (`app.useLogger`): nestjs-pino's, start-up lines at debug. */
export class ServiceLogger extends Logger {
  override log(message: unknown, ...optionalParams: unknown[]): void {
    const context = optionalParams.at(-1);
    if (typeof context === 'string' && NEST_STARTUP_CONTEXTS.has(context))
      this.debug(message, ...optionalParams);
    else super.log(message, ...optionalParams);
  }
}
